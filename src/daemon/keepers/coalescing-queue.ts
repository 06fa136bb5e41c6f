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

/**
 * Where a key stands: waiting for a slot, running, or running with one more pass owed after it (it
 * was triggered during the pass). A key the queue does not hold has no pass pending.
 */
type KeyState = 'waiting' | 'running' | 'running-again';

/** What a queue runs: the passes of its owner (a keeper, the installed files), one key at a time. */
export interface PassRunner<K> {
  runPass(key: K): Promise<void>;
  /** The pass of `key` threw: its owner reports it (the next trigger runs it again). */
  passFailed(key: K, error: unknown): void;
  /** Room for one more pass beside the running ones (the reconciler's bound on the bytes held). */
  hasRoom?(): boolean;
}

export class CoalescingQueue<K = string> {
  // One state per key rather than a set per condition: a storm's pass touches this map twice or
  // three times instead of seven set and map operations.
  private readonly states = new Map<K, KeyState>();
  private readonly waiting = new Set<K>(); // the waiting keys, in trigger order
  private running = 0;
  private drained: Array<() => void> = [];

  constructor(
    private readonly runner: PassRunner<K>,
    private readonly limit = DEFAULT_PASS_CONCURRENCY,
  ) {}

  trigger(key: K): void {
    const state = this.states.get(key);
    if (state === 'running') {
      this.states.set(key, 'running-again');
      return;
    }
    // Waiting: its pass has not started and will see this change anyway. Running-again: owed already.
    if (state !== undefined) return;
    if (this.canStart()) {
      this.start(key);
    } else {
      this.states.set(key, 'waiting');
      this.waiting.add(key);
    }
  }

  // The key is running before its pass starts: a pass that triggers its own key synchronously owes
  // one more pass rather than starting a second, concurrent one.
  private start(key: K): void {
    this.states.set(key, 'running');
    this.running++;
    void this.run(key);
  }

  private async run(key: K): Promise<void> {
    for (;;) {
      try {
        await this.runner.runPass(key);
      } catch (error) {
        this.runner.passFailed(key, error);
      }
      // Read and updated in one synchronous step, so no trigger can fall between the two.
      if (this.states.get(key) === 'running-again') {
        this.states.set(key, 'running');
        continue;
      }
      this.states.delete(key);
      this.running--;
      this.startWaiting();
      if (this.states.size === 0) this.settle();
      return;
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
    return this.running === 0 || (this.running < this.limit && (this.runner.hasRoom?.() ?? true));
  }

  private settle(): void {
    const drained = this.drained;
    this.drained = [];
    for (const resolve of drained) resolve();
  }

  /** Keys running or waiting. */
  get size(): number {
    return this.states.size;
  }

  /** Resolves once no pass is running or waiting (including passes triggered meanwhile). */
  async drain(): Promise<void> {
    while (this.states.size > 0) await new Promise<void>((resolve) => this.drained.push(resolve));
  }
}
