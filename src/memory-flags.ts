// V8's heap sizing for a small, long-lived node agent. --optimize-for-size makes V8 grow the heap less
// eagerly and collect sooner: a resync of 10,000 configs peaks ~25 MiB lower (measured with VmHWM), at
// no cost the bench can see, since a pass allocates little.
//
// It is set once the first scan's writes are on their way, not at the top of the CLI: node:v8 loads
// Node's heap utilities and with them the whole of node:stream, 2.5 ms that would stand between exec
// and the first patch. The flag governs how the heap grows (V8 reads it when it sizes the heap after a
// collection), so setting it a few milliseconds into the process changes nothing it is there for.
export async function optimizeHeapForSize(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--optimize-for-size');
}
