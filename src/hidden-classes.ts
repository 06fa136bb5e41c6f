// V8 describes every object by a hidden class (a "map"), and holds a map only while some object has
// it. The map of a kind of object that exists only during passes (an open directory, a Buffer the
// addon made, a scanned config's nodes) dies with the last such object at the next full collection:
// the one after each burst (memory-return.ts), which reduces memory and so retains no map that no
// object has. The next pass makes a new map, and V8 throws away the optimized code that had learnt
// the old one (--trace-deopt: "embedded weak objects cleared", "dependent field type changed") and
// compiles it again, in every storm. One example object of each such kind, kept for the process's
// life, keeps its map (measured: docs/performance.md).
const examples: object[] = [];

/** Keeps `example`, and with it its hidden class, for the life of the process. */
export function keepHiddenClass(example: object): void {
  examples.push(example);
}
