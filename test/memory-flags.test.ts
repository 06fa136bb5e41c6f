import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/addon-path.js';
import { runProcess } from './helpers/run-node.js';

// The heap flags as the daemon sets them (--optimize-for-size at start, the marking triggers once start
// is done), in a process of their own, against --optimize-for-size alone: a heap over V8's 8 MB activation threshold, collected as at the end of a burst, then a storm
// of allocation whose passes outlive a scavenge or two. Full collections are counted as Node reports them.
const script = (setFlags: string) => `
  import v8 from 'node:v8';
  import { PerformanceObserver, constants } from 'node:perf_hooks';
  ${setFlags};
  const ballast = Array.from({ length: 120000 }, (_, i) => ({ i, s: 'b' + i }));
  gc();
  let majors = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  });
  observer.observe({ entryTypes: ['gc'] });
  let inFlight = [];
  for (let round = 0; round < 50; round++) {
    for (let k = 0; k < 20; k++) {
      inFlight.push(Array.from({ length: 2000 }, (_, i) => ({ i, s: 'x' + i })));
      if (inFlight.length > 6) inFlight.shift();
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  console.log(JSON.stringify({ majors, kept: ballast.length }));`;

async function majorsDuringStorm(setFlags: string): Promise<number> {
  const result = await runProcess(process.execPath, ['--expose-gc', '--input-type=module', '-e', script(setFlags)]);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { majors: number }).majors;
}

describe('the heap flags once start is done (real V8)', () => {
  it('starts no full collection during a storm, where --optimize-for-size alone starts one at once', async () => {
    const flags = pathToFileURL(path.join(repoRoot, 'dist', 'src', 'memory-flags.js')).href;
    expect(await majorsDuringStorm(`const { markByTriggers, optimizeHeapForSize } = await import(${JSON.stringify(flags)}); await optimizeHeapForSize(); await markByTriggers()`)).toBe(0);
    expect(await majorsDuringStorm(`v8.setFlagsFromString('--optimize-for-size')`)).toBeGreaterThan(0);
  });
});
