// V8's heap flags for a small, long-lived node agent, set in two steps.
//
// At start, --optimize-for-size: V8 grows the heap less eagerly and collects sooner. A resync of
// 10,000 configs peaks ~25 MiB lower (measured with VmHWM), at no cost the bench can see, since a pass
// allocates little. It is set once the first scan's writes are on their way, not at the top of the
// CLI: node:v8 loads Node's heap utilities and with them the whole of node:stream, 2.5 ms that would
// stand between exec and the first patch. Set there, it still does what it is for (measured: 10,000
// configs at start peaked at 82-89 MiB with the flag set here or first, 119 MiB without it).
export async function optimizeHeapForSize(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--optimize-for-size');
}

// Once start is done, explicit marking triggers. The same flag makes V8 start a full (incremental)
// marking as soon as the room left under the old generation's limit is smaller than the young
// generation (V8's heap.cc, IncrementalMarkingLimitReached). After the collection that ends a burst
// (memory-return.ts) that is nearly always so: every storm began a full marking in its first tens of
// milliseconds, with 4-5 MB of room left (--trace-incremental-marking: "Start (allocation limit)"),
// and paid for it on V8's threads. The triggers replace that rule: marking starts by a task at 80% of
// the limit, and at once at 90% (measured: docs/performance.md). Not during start: before its first
// full collection V8's limit is its large initial one, and a start with 10,000 configs then peaked at
// 94-119 MiB against 83-105 (VmHWM, six runs each).
export async function markByTriggers(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--incremental-marking-soft-trigger=80');
  setFlagsFromString('--incremental-marking-hard-trigger=90');
}
