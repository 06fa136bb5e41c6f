// Values worked out at most once per key and event-loop turn. Every pass started by one inotify read
// (or one scan) runs in the same turn, so a listing of net.d made for the first of them serves all:
// what changes afterwards brings its own event, handled in a later turn, by which time the memo has
// forgotten (it is cleared at the turn's setImmediate).
export class TurnMemo<K, V> {
  private readonly values = new Map<K, V>();

  get(key: K, compute: () => V): V {
    if (this.values.has(key)) return this.values.get(key) as V;
    const value = compute();
    if (this.values.size === 0) setImmediate(() => this.values.clear());
    this.values.set(key, value);
    return value;
  }

  /** Works `key` out again at its next `get`, in this turn too. */
  forget(key: K): void {
    this.values.delete(key);
  }
}
