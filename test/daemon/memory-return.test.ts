import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryReturn } from '../../src/daemon/lifecycle/memory-return.js';
import { addonFile } from '../helpers/addon-path.js';
import { runProcess } from '../helpers/run-node.js';

describe('MemoryReturn', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('collects and trims once at start, and once after a burst of passes has been quiet for 250 ms', () => {
    const trims: number[] = [];
    let collections = 0;
    const memory = new MemoryReturn(
      () => trims.push(Date.now()) > 0,
      () => void collections++,
    );
    memory.afterStart();
    expect(trims).toHaveLength(1);
    // The young generation start grew goes back too.
    expect(collections).toBe(1);
    // A few changes are no burst: nothing more, however long.
    for (let i = 0; i < 10; i++) memory.passDone();
    vi.advanceTimersByTime(5_000);
    expect(trims).toHaveLength(1);
    // A storm of 1,000 passes over 2 s: no trim while it goes on, one a second after it ends.
    for (let i = 0; i < 1_000; i++) {
      memory.passDone();
      vi.advanceTimersByTime(2);
    }
    expect(trims).toHaveLength(1);
    // The last pass was 2 ms ago.
    vi.advanceTimersByTime(247);
    expect(trims).toHaveLength(1);
    vi.advanceTimersByTime(2);
    expect(trims).toHaveLength(2);
    // V8's heap is collected after the burst too.
    expect(collections).toBe(2);
    vi.advanceTimersByTime(10_000);
    expect(trims).toHaveLength(2);
  });

  it('trims nothing once disposed', () => {
    let trims = 0;
    const memory = new MemoryReturn(
      () => ++trims > 0,
      () => {},
    );
    for (let i = 0; i < 100; i++) memory.passDone();
    memory.dispose();
    vi.advanceTimersByTime(5_000);
    expect(trims).toBe(0);
  });
});

describe('mallocTrim (the addon, real glibc)', () => {
  it('gives freed malloc memory back to the kernel: RssAnon drops by most of what was freed', async () => {
    // 64 MiB in 64 KiB blocks, each malloc'd by its own (allocUnsafeSlow, under glibc's mmap
    // threshold), touched, then freed by a full GC: glibc keeps it, until the trim.
    const script = `
      const addon = require(${JSON.stringify(addonFile)});
      const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
      let blocks = [];
      for (let i = 0; i < 1024; i++) blocks.push(Buffer.allocUnsafeSlow(64 * 1024).fill(i));
      const full = anon();
      blocks = undefined;
      // Backing stores are freed after the GC, off the main thread: let it finish.
      setTimeout(() => { gc(); setTimeout(() => { gc();
        const freed = anon();
        const released = addon.mallocTrim();
        console.log(JSON.stringify({ full, freed, trimmed: anon(), released }));
      }, 50); }, 10);`;
    const result = await runProcess(process.execPath, ['--expose-gc', '-e', script]);
    expect(result.code, result.stderr).toBe(0);
    const { full, freed, trimmed, released } = JSON.parse(result.stdout) as { full: number; freed: number; trimmed: number; released: boolean };
    // glibc gave some back by itself; what it kept, the trim returns, down to far below the peak.
    expect(released).toBe(true);
    expect(freed - trimmed).toBeGreaterThan(4);
    expect(full - trimmed).toBeGreaterThan(48);
  });
});

describe('collectGarbageForMemory (the addon, real V8)', () => {
  // A young generation grown by batches of objects that outlive a scavenge or two, as a storm's
  // passes in flight do; then each way of collecting, in a process of its own.
  const script = (collect: string) => `
    const addon = require(${JSON.stringify(addonFile)});
    const v8 = require('v8');
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576;
    let kept = [];
    for (let round = 0; round < 200; round++) {
      kept.push(Array.from({ length: 5000 }, (_, i) => ({ i, s: 'x' + i })));
      if (kept.length > 8) kept.shift();
    }
    kept = [];
    const grown = young();
    const used = process.memoryUsage().heapUsed;
    ${collect};
    console.log(JSON.stringify({ grown, after: young(), freedMiB: (used - process.memoryUsage().heapUsed) / 1048576 }));`;
  const run = async (collect: string) => {
    const result = await runProcess(process.execPath, ['--expose-gc', '-e', script(collect)]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as { grown: number; after: number; freedMiB: number };
  };

  it('collects the heap and shrinks the young generation back, where gc() leaves it grown', async () => {
    const pressure = await run('addon.collectGarbageForMemory()');
    expect(pressure.grown).toBeGreaterThan(2);
    expect(pressure.freedMiB).toBeGreaterThan(1);
    expect(pressure.after).toBeLessThanOrEqual(1);
    const forced = await run('gc()');
    expect(forced.freedMiB).toBeGreaterThan(1);
    expect(forced.after).toBe(forced.grown);
  });
});
