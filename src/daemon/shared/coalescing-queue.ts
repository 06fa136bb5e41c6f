// Per-key serialisation with coalescing: at most one pass of a key runs at a time, and any number of
// triggers during a pass cause exactly one more pass afterwards. At most `limit` passes run at once,
// and while others run a pass starts only if `hasRoom()` says so (the reconciler's bound on the bytes
// its passes hold); the others wait in trigger order. With room, the first pass starts synchronously
// inside trigger(), so a complete-write event is acted on at once (a trigger from inside a pass:
// as soon as that pass's runPass returns).
//
// The limit bounds what passes hold between their read and their write's completion: an fd for a
// symlink's target directory, a write waiting on the pool. Their writes go to libuv's pool in batches
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

/** Tells the queue that the pass of `key` is over. */
export type PassEnded<K> = (key: K) => void;

/** What a queue runs: the passes of its owner (a keeper, the installed files), one key at a time. */
export interface PassRunner<K> {
  /**
   * One pass of `key`: either a promise, and the pass is over when it settles (a rejection is a failed
   * pass), or nothing, and the runner calls `ended(key)` exactly once, at once or later (the
   * reconciler's storm path: no promise per file, docs/performance.md). A throw is a failed pass.
   */
  runPass(key: K, ended: PassEnded<K>): Promise<void> | void;
  /** The pass of `key` threw: its owner reports it (the next trigger runs it again). */
  passFailed(key: K, error: unknown): void;
  /** Room for one more pass beside the running ones (the reconciler's bound on the bytes held). */
  hasRoom?(): boolean;
}

export class CoalescingQueue<K = string> {
  // One state per key rather than a set per condition: a storm's pass touches this map twice or
  // three times instead of seven set and map operations.
  private readonly states = new Map<K, KeyState>();
  // The waiting keys in trigger order, from `waitingHead` on (a key waits at most once: its state says
  // so). An array rather than a Set: a Set's first element, looked up after each start, is found
  // by skipping the deleted ones before it, quadratic over a start with 10,000 configs.
  private waiting: K[] = [];
  private waitingHead = 0;
  /** Keys whose pass is owed now (ended as running-again), for the loop in startPasses. */
  private readonly again: K[] = [];
  private running = 0;
  /** startPasses is on the stack: a pass that ends synchronously leaves the next start to it. */
  private starting = false;
  private drained: Array<() => void> = [];
  private readonly ended: PassEnded<K> = (key) => this.passEnded(key);

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
    this.states.set(key, 'waiting');
    this.waiting.push(key);
    this.startPasses();
  }

  private passEnded(key: K): void {
    const state = this.states.get(key);
    // A runner that says so twice (a defect) frees no second slot once the key's pass is over: the
    // bound would not hold. (Were the key running again by then, the defect would end that pass.)
    if (state !== 'running' && state !== 'running-again') return;
    // Read and updated in one synchronous step, so no trigger can fall between the two.
    if (state === 'running-again') {
      this.states.set(key, 'running');
      this.again.push(key);
    } else {
      this.states.delete(key);
      this.running--;
    }
    this.startPasses();
    if (this.states.size === 0) this.settle();
  }

  // One loop starts every pass that may start: passes that end synchronously (a config already
  // chained) end inside runPass, and starting the next one from there would nest a frame per pass
  // (a start with 10,000 configs).
  private startPasses(): void {
    if (this.starting) return;
    this.starting = true;
    try {
      for (;;) {
        const owed = this.again.pop();
        if (owed !== undefined) {
          this.run(owed);
          continue;
        }
        const next = this.nextWaiting();
        if (next === undefined) return;
        // The key is running before its pass starts: a pass that triggers its own key synchronously
        // owes one more pass rather than starting a second, concurrent one.
        this.states.set(next, 'running');
        this.running++;
        this.run(next);
      }
    } finally {
      this.starting = false;
    }
  }

  /** The first waiting key, taken off the list, when a pass may start. */
  private nextWaiting(): K | undefined {
    if (this.waitingHead === this.waiting.length || !this.canStart()) return undefined;
    const key = this.waiting[this.waitingHead++]!;
    if (this.waitingHead === this.waiting.length) {
      this.waiting.length = 0;
      this.waitingHead = 0;
    } else if (this.waitingHead >= 1024 && 2 * this.waitingHead >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitingHead); // the taken half goes
      this.waitingHead = 0;
    }
    return key;
  }

  private run(key: K): void {
    let pass: Promise<void> | void;
    try {
      pass = this.runner.runPass(key, this.ended);
    } catch (error) {
      this.runner.passFailed(key, error);
      this.passEnded(key);
      return;
    }
    if (pass instanceof Promise) {
      pass.then(
        () => this.passEnded(key),
        (error: unknown) => {
          this.runner.passFailed(key, error);
          this.passEnded(key);
        },
      );
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
