// Per-key serialisation with coalescing: at most one pass of a key runs at a time, and any number of
// triggers during a pass cause exactly one more pass afterwards. The first pass starts synchronously
// inside trigger(), so a complete-write event is acted on at once.
export class CoalescingQueue {
  private readonly active = new Set<string>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly pass: (key: string) => Promise<void>,
    private readonly onError: (key: string, error: unknown) => void,
  ) {}

  trigger(key: string): void {
    if (this.active.has(key)) {
      this.again.add(key);
      return;
    }
    // Marked before the pass starts: a pass that triggers its own key synchronously must not start a
    // second, concurrent pass.
    this.active.add(key);
    this.running.set(key, this.run(key));
  }

  private async run(key: string): Promise<void> {
    for (;;) {
      this.again.delete(key);
      try {
        await this.pass(key);
      } catch (error) {
        this.onError(key, error);
      }
      // Checked and cleared in one synchronous step, so no trigger can fall between the two.
      if (!this.again.has(key)) {
        this.active.delete(key);
        this.running.delete(key);
        return;
      }
    }
  }

  get size(): number {
    return this.running.size;
  }

  /** Resolves once no pass is running (including passes triggered meanwhile). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }
}
