// The memory baseline: a bare Node listening with node:http, started with the agent's environment
// and measured like it, in the same run. Anything an agent holds beyond this is its own.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Agent, type Memory } from './agent.js';

// Listens on HEALTH_PORT as the agent does, then says so as the agent's log does.
const SCRIPT = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.HEALTH_PORT), () => process.stdout.write('{"msg":"started"}\\n'));`;

/** Anonymous and file-backed memory of a bare node:http server, 1 s after it listens (median of `runs`). */
export async function bareNodeMemory(dir: string, env: NodeJS.ProcessEnv, runs = 3): Promise<Memory> {
  mkdirSync(dir, { recursive: true });
  const samples: Memory[] = [];
  for (let r = 0; r < runs; r++) {
    const node = new Agent(['-e', SCRIPT], env, dir, `bare-node-${r}`);
    await node.waitForLog('started');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    samples.push(node.memory());
    node.child.kill('SIGKILL');
    await new Promise((resolve) => node.child.once('exit', resolve));
  }
  const mid = (pick: (m: Memory) => number) => samples.map(pick).sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)]!;
  return { anonMiB: mid((m) => m.anonMiB), fileMiB: mid((m) => m.fileMiB), shmemMiB: mid((m) => m.shmemMiB) };
}

export const bareNodeDir = (scratch: string) => path.join(scratch, 'bare-node');
