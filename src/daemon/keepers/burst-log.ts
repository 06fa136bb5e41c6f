// Collapses a burst of per-file events into one log line: the first `add` of a burst schedules the
// line for when the loop is quiet again (a short timer), carrying the count and the first few names.
const SAMPLE = 10;
const QUIET_MS = 50;

export class BurstLog {
  private names: string[] = [];
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly write: (count: number, sample: string[]) => void) {}

  add(name: string): void {
    this.count++;
    if (this.names.length < SAMPLE) this.names.push(name);
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.flush(), QUIET_MS);
    this.timer.unref();
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count === 0) return;
    this.write(this.count, this.names);
    this.names = [];
    this.count = 0;
  }
}
