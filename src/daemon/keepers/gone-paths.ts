// Config paths whose file is gone, in the order they went, with the time each went.
//
// What the reconciler keeps per path it patched (the hash of its last write, the fight rule's state)
// still matters for a while after the file goes: a primary that deletes its config and writes it anew
// must count as rewriting our patch, for the fight rule and for spares. Once the fight rule's calm
// period has passed it no longer can: a fight with no reactive revert for that long is over, and a
// re-created file is then just a new file. Kept for ever, that memory would grow with every config
// name the node ever had (a primary that writes uniquely named files, a churn of test configs).
//
// Expiry is checked when another path goes and at each resync, so it costs nothing on the hot path
// and needs no timer of its own.

export class GonePaths {
  // A Map iterates in insertion order, and a path that goes again is re-inserted: oldest first.
  private readonly since = new Map<string, number>();

  constructor(
    private readonly keepMs: number,
    private readonly now: () => number,
  ) {}

  /** `path` is gone now. Returns the paths gone for longer than `keepMs`, which are no longer tracked. */
  went(path: string): string[] {
    const now = this.now();
    this.since.delete(path);
    this.since.set(path, now);
    return this.expired(now);
  }

  /** The paths gone for longer than `keepMs` (no longer tracked from now on). */
  expire(): string[] {
    return this.since.size === 0 ? [] : this.expired(this.now());
  }

  private expired(now: number): string[] {
    const expired: string[] = [];
    for (const [gone, at] of this.since) {
      if (now - at <= this.keepMs) break;
      this.since.delete(gone); // deleting the entry the iteration is at is safe for a Map
      expired.push(gone);
    }
    return expired;
  }

  /** `path` is there again: its memory lives as long as the file does. */
  cameBack(path: string): void {
    if (this.since.size > 0) this.since.delete(path);
  }

  has(path: string): boolean {
    return this.since.has(path);
  }

  get size(): number {
    return this.since.size;
  }
}
