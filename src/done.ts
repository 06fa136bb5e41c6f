// The callback the storm's write path uses instead of promises (daemon/keepers/reconciler.ts, runPass):
// told once how an operation ended. A storm's 128 writes wait on the pool at once, and a promise and
// frame each would outlive a scavenge (docs/performance.md). Where a caller waits on more than that
// path (a conversion, a test), the two adapters below join it to promises.

/** Told once: `value`, or, when there is none, the `error` that stopped the operation. */
export type Done<T> = (error: unknown, value?: T) => void;

/** An operation that tells a Done, as a promise. */
export function promised<T>(start: (done: Done<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (value === undefined ? reject(error) : resolve(value))));
}

/** Tells `done` how `promise` settles. */
export function tellWhenSettled<T>(promise: Promise<T>, done: Done<T>): void {
  promise.then((value) => done(undefined, value), done);
}
