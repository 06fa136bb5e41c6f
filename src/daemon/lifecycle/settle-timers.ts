// A regular file that was created or modified may still be being written. Its IN_CLOSE_WRITE says
// it is complete; a writer that keeps the file open is given a quiet period instead.
export const QUIET_PERIOD_MS = 100;

export class SettleTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly quietMs = QUIET_PERIOD_MS) {}

  /** (Re)starts the quiet period of `key`; `fire` runs once it passes without another arm(). */
  arm(key: string, fire: () => void): void {
    this.cancel(key);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        fire();
      }, this.quietMs),
    );
  }

  cancel(key: string): void {
    const timer = this.timers.get(key);
    if (timer === undefined) return; // most events: a renamed-in config never had a timer
    clearTimeout(timer);
    this.timers.delete(key);
  }

  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
