// Per-key serialisation with coalescing: at most one pass of a key runs at a time, and any number of
// triggers during a pass cause exactly one more pass afterwards. At most `limit` passes run at once,
// and while others run a pass starts only if `hasRoom()` says so (the reconciler's bound on the bytes
// its passes hold); the others wait in trigger order. With room, the first pass starts synchronously
// inside trigger(), so a complete-write event is acted on at once.
//
// The limit bounds what passes hold between their read and their write's completion: an fd for a
// symlink's target directory, a pending promise. Their writes go to libuv's pool in batches
// (fs/replace-batches.ts), so the limit also sets how large a batch can be: at 32, a storm's passes
// finished two by two and each next one went to the pool alone (4,734 hand-offs for 5,000 files; at
// 128, 131 of ~38 files each), and waking a pool thread per file cost more CPU than its syscalls.
// Beyond 128 storms were no faster, and a start with 10,000 configs peaked higher.
export const DEFAULT_PASS_CONCURRENCY = 128;

export class CoalescingQueue<K = string> {
  private readonly active = new Set<K>(); // running or waiting for a slot
  private readonly running = new Map<K, Promise<void>>();
  private readonly waiting = new Set<K>();
  private readonly again = new Set<K>();

  constructor(
    private readonly pass: (key: K) => Promise<void>,
    private readonly onError: (key: K, error: unknown) => void,
    private readonly limit = DEFAULT_PASS_CONCURRENCY,
    private readonly hasRoom: () => boolean = () => true,
  ) {}

  trigger(key: K): void {
    if (this.active.has(key)) {
      // A waiting key's pass has not started: it will see this change anyway. (Not `running.has`: a
      // pass that triggers its own key synchronously runs before its promise is recorded.)
      if (!this.waiting.has(key)) this.again.add(key);
      return;
    }
    // Marked before the pass starts: a pass that triggers its own key synchronously must not start a
    // second, concurrent pass.
    this.active.add(key);
    if (this.canStart()) this.start(key);
    else this.waiting.add(key);
  }

  private start(key: K): void {
    this.running.set(key, this.run(key));
  }

  private async run(key: K): Promise<void> {
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
        this.startWaiting();
        return;
      }
    }
  }

  private startWaiting(): void {
    for (const key of this.waiting) {
      if (!this.canStart()) return;
      this.waiting.delete(key);
      this.start(key);
    }
  }

  // Alone, a pass always starts: room is a bound on company, never a reason to stall.
  private canStart(): boolean {
    return this.running.size === 0 || (this.running.size < this.limit && this.hasRoom());
  }

  /** Keys running or waiting. */
  get size(): number {
    return this.active.size;
  }

  /** Resolves once no pass is running or waiting (including passes triggered meanwhile). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()]);
  }
}
