// Storms at two sizes against one agent (docs/performance.md): first rename to last patched, with
// 1,000 and 4,000 new files by default. The cost of a file must not grow with the number of files
// around it: the ratio of the two should be about the ratio of the sizes.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Agent } from './agent.js';
import type { Floor } from './floor.js';
import { Observer } from './observer.js';
import { cli, REPEAT, STORM_SCALE } from './options.js';
import { agentEnv, hostTree, median, pad, storm } from './phases.js';

export interface StormScaling {
  sizes: Array<{ files: number; wallMs: number; cpuUsPerFile: number }>;
  /** t(large) / t(small); linear growth is large / small. */
  ratio: number;
}

export async function stormScaling(floor: Floor, scratch: string, [small, large] = STORM_SCALE): Promise<StormScaling> {
  const dir = path.join(scratch, 'storm-scaling');
  const { hostRoot, netDir, bin } = hostTree(dir);
  const observer = new Observer(netDir);
  const agent = new Agent(cli, await agentEnv(hostRoot, bin, scratch, 'native'), dir, 'agent');
  const runs: Record<number, Array<{ wallMs: number; cpuUsPerFile: number }>> = { [small]: [], [large]: [] };
  try {
    await agent.waitForLog('started');
    await new Promise((r) => setTimeout(r, 1000));
    // Interleaved, and each storm's files removed after it, so that both sizes start from the same
    // directory and a slow minute of the machine hits both alike.
    for (let r = 0; r < REPEAT; r++) {
      for (const n of [small, large]) {
        const names = Array.from({ length: n }, (_, i) => `${pad(i)}-scale${n}-${r}.conflist`);
        runs[n]!.push(await storm(floor, agent, observer, netDir, names));
        for (const name of names) rmSync(path.join(netDir, name), { force: true });
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  } finally {
    await agent.stop();
    await observer.close();
  }
  const sizes = [small, large].map((files) => ({ files, wallMs: median(runs[files]!.map((s) => s.wallMs)), cpuUsPerFile: median(runs[files]!.map((s) => s.cpuUsPerFile)) }));
  return { sizes, ratio: sizes[1]!.wallMs / sizes[0]!.wallMs };
}
