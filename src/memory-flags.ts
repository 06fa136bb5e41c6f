// V8's heap sizing for a small, long-lived node agent. --optimize-for-size makes V8 grow the heap less
// eagerly and collect sooner: a resync of 10,000 configs peaks ~25 MiB lower (measured with VmHWM), at
// no cost the bench can see, since a pass allocates little.
//
// The same flag also makes V8 start a full (incremental) marking as soon as the room left under the
// old generation's limit is smaller than the young generation (V8's heap.cc,
// IncrementalMarkingLimitReached). After the collection that ends a burst (memory-return.ts) that is
// nearly always so: every storm began a full marking in its first tens of milliseconds, with 4-5 MB
// of room left (--trace-incremental-marking: "Start (allocation limit)"), and paid for it on V8's
// threads. Explicit triggers replace that rule: marking starts by a task at 80% of the limit, and at
// once at 90% (measured: docs/performance.md).
//
// Both are set once the first scan's writes are on their way, not at the top of the CLI: node:v8 loads
// Node's heap utilities and with them the whole of node:stream, 2.5 ms that would stand between exec
// and the first patch. Set there, they still do what they are for (measured: 10,000 configs at start
// peaked at 82-89 MiB with the flag set here or first, 119 MiB without it).
export async function optimizeHeapForSize(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--optimize-for-size');
  setFlagsFromString('--incremental-marking-soft-trigger=80');
  setFlagsFromString('--incremental-marking-hard-trigger=90');
}
