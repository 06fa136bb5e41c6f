// How many bytes of config the running passes hold: each holds a file's content and its patched copy
// from its read until its write completes. Up to 128 passes run at once (coalescing-queue.ts); with
// configs near MAX_CONFIG_BYTES (1 MiB by default) that would be a quarter of a GiB, so a pass starts only
// while the others hold less than the budget. A pass is never refused alone, so one config as large
// as MAX_CONFIG_BYTES is always patched.
export const DEFAULT_BYTES_BUDGET = 4 << 20;

export class BytesInFlight {
  private held = 0;

  constructor(private readonly budget = DEFAULT_BYTES_BUDGET) {}

  get hasRoom(): boolean {
    return this.held < this.budget;
  }

  /** A pass holds `bytes` from its read; it gives them back with release() once its write is done. */
  hold(bytes: number): void {
    this.held += bytes;
  }

  release(bytes: number): void {
    this.held -= bytes;
  }

  /**
   * `bytes` held until `outcome` settles: a pass whose decision is there at once held them only
   * while it ran synchronously, when no other pass can start. A continuation rather than an async
   * function: a storm's suspended frames would outlive a scavenge (docs/performance.md).
   */
  holdUntil<T>(bytes: number, outcome: T | Promise<T>): T | Promise<T> {
    if (!(outcome instanceof Promise)) return outcome;
    this.hold(bytes);
    return outcome.then(
      (value) => (this.release(bytes), value),
      (err: unknown) => {
        this.release(bytes);
        throw err;
      },
    );
  }
}
