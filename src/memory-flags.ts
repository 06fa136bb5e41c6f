// V8's heap sizing for a small, long-lived node agent. --optimize-for-size makes V8 grow the heap less
// eagerly and collect sooner: a resync of 10,000 configs peaks ~25 MiB lower (measured with VmHWM), at
// no cost the bench can see, since a pass allocates little.
//
// It is set once the first scan's writes are on their way, not at the top of the CLI: node:v8 loads
// Node's heap utilities and with them the whole of node:stream, 2.5 ms that would stand between exec
// and the first patch. Set there, it still does what it is for (measured: 10,000 configs at start
// peaked at 82-89 MiB with the flag set here or first, 119 MiB without it).
export async function optimizeHeapForSize(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8');
  setFlagsFromString('--optimize-for-size');
}
