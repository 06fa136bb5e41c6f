// The node sampler the cluster and stop tests judge windows with (test/helpers/node-sampler.ts): a run
// of unchained samples is ended only by a sample that found the config chained, never by a pause of
// the sampler. A CI run once failed "one window" on a 1.7 s window of 76 samples where 84 were due:
// the rule then was "no two unchained samples more than 100 ms apart", which a stalled sampler breaks.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sampleNode } from './helpers/node-sampler.js';
import { tempDir } from './helpers/tmp.js';

const CHAINED = JSON.stringify({ plugins: [{ type: 'bridge' }, { type: 'linkerd-cni' }] });
const UNCHAINED = JSON.stringify({ plugins: [{ type: 'bridge' }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('node sampler', () => {
  it('counts runs by what the samples found: a stalled sampler is one run, a chained interlude makes two', async () => {
    const dir = tempDir();
    const config = path.join(dir, '10-bridge.conflist');
    const binary = path.join(dir, 'linkerd-cni');
    writeFileSync(config, CHAINED);
    writeFileSync(binary, '');
    const sampler = await sampleNode(config, binary, 'linkerd-cni', 5);
    await sleep(50);
    writeFileSync(config, UNCHAINED);
    await sleep(50);
    process.kill(sampler.pid, 'SIGSTOP');
    await sleep(250);
    process.kill(sampler.pid, 'SIGCONT');
    await sleep(50);
    const stalled = await sampler.stop();
    expect(stalled.maxGapMs).toBeGreaterThanOrEqual(200);
    expect(stalled.runs).toEqual({ unchained: 1, missingBinary: 0 });

    writeFileSync(config, CHAINED);
    const flipping = await sampleNode(config, binary, 'linkerd-cni', 5);
    // Each state held 200 ms, well past the sampler's longest gap on a loaded node (124 ms logged).
    for (const text of [UNCHAINED, CHAINED, UNCHAINED, CHAINED]) {
      writeFileSync(config, text);
      await sleep(200);
    }
    const samples = await flipping.stop();
    expect(samples.runs).toEqual({ unchained: 2, missingBinary: 0 });
    expect(samples.missingBinary).toEqual([]);
  });
});
