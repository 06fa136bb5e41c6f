// Start with many configs already on the node (docs/performance.md): exec → every config chained, with
// N existing configs of which 10% are single-plugin `.conf` files (each converted to a conflist), at
// two sizes. Growth must be linear: a conversion once listed and read all of net.d (quadratic).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { agentEnv, hostTree, median, pad } from './phases.js';
import { cli, PRIMARY, repo, SCALE } from './options.js';

const SINGLE = readFileSync(path.join(repo, 'test', 'fixtures', 'conflists', '99-bridge.conf'), 'utf8');

export interface StartScaling {
  sizes: Array<{ configs: number; ms: number }>;
  /** t(large) / t(small); linear growth is about large / small. */
  ratio: number;
}

/** ms from exec to the agent's "ready" (every config chained), median of `runs`. */
async function timeToReady(scratch: string, configs: number, run: number): Promise<number> {
  const { hostRoot, netDir, bin } = hostTree(path.join(scratch, `scale-${configs}-${run}`));
  for (let i = 0; i < configs; i++) {
    if (i % 10 === 0) writeFileSync(path.join(netDir, `${pad(i)}-single.conf`), SINGLE.replace('"name": "', `"name": "n${i}-`));
    else writeFileSync(path.join(netDir, `${pad(i)}-list.conflist`), PRIMARY);
  }
  const env = await agentEnv(hostRoot, bin, scratch, 'native');
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [cli, 'run'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${configs} configs: not ready after 120 s`)), 120_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      if (buffered.includes('"msg":"ready: every config is chained"')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  child.kill('SIGKILL');
  return ms;
}

export async function startScaling(scratch: string, [small, large] = SCALE, runs = 3): Promise<StartScaling> {
  const times: Record<number, number[]> = { [small]: [], [large]: [] };
  // Interleaved, so that a slow minute of the disk hits both sizes alike.
  for (let r = 0; r < runs; r++) for (const n of [small, large]) times[n]!.push(await timeToReady(scratch, n, r));
  const sizes = [small, large].map((configs) => ({ configs, ms: median(times[configs]!) }));
  return { sizes, ratio: sizes[1]!.ms / sizes[0]!.ms };
}
