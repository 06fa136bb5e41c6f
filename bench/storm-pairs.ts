// Storms of two programs in interleaved rounds (docs/performance.md, "Storm pairs"): by default the
// agent and the reference (bench/bare-agent.ts), or any two bundles, e.g. a build of the code before
// a change copied aside against the build after it. This machine's speed swings several-fold between
// minutes, so one program's storms are never all run in one stretch: each round starts a fresh
// process of each, in alternating order, and runs `--per` storms of `--files` new files on tmpfs,
// each storm's files removed before the next. Printed: the medians of wall time (first rename to
// last patched) and CPU per file by thread, and the ratios A / B.
//
//   npm run build && node dist/bench/storm-pairs.js [--rounds 4] [--per 5] [--files 1000]
//                                                   [--a dist/cni-chainer.mjs] [--b dist/bench/bare-agent.mjs]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, type ThreadKind } from './agent.js';
import { Floor } from './floor.js';
import { Observer } from './observer.js';
import { bareAgent, cli, FILES, option, PLUGIN_FILE, PRIMARY_FILE, repo } from './options.js';
import { agentEnv, f, hostTree, median, pad, storm, type Storm } from './phases.js';

const ROUNDS = Number(option('rounds', '4'));
const PER = Number(option('per', '5'));
const programs: Array<[string, string]> = [
  ['A', path.resolve(option('a', cli))],
  ['B', path.resolve(option('b', bareAgent))],
];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function round(scratch: string, floor: Floor, label: string, program: string): Promise<Storm[]> {
  const dir = path.join(scratch, label);
  const { hostRoot, netDir, bin } = hostTree(dir);
  const observer = new Observer(netDir);
  const agent = new Agent(program, await agentEnv(hostRoot, bin, dir, 'native'), dir, 'agent');
  const storms: Storm[] = [];
  try {
    await agent.waitForLog('started');
    // Start's own collections and compilation are over before the first storm is counted.
    await pause(1000);
    for (let s = 0; s < PER; s++) {
      const names = Array.from({ length: FILES }, (_, i) => `${pad(i)}-pair${s}.conflist`);
      storms.push(await storm(floor, agent, observer, netDir, names));
      // The burst's memory return (daemon/lifecycle/memory-return.ts) runs 250 ms after a burst: it
      // is over before the removals and the next storm, so that neither is charged for it.
      await pause(500);
      for (const name of names) rmSync(path.join(netDir, name), { force: true });
      await pause(500);
    }
  } finally {
    await agent.stop();
    await observer.close();
  }
  return storms;
}

async function main(): Promise<void> {
  for (const [, program] of programs) if (!existsSync(program)) throw new Error(`${program}: no such program (npm run build first)`);
  const scratch = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'cni-chainer-pairs-'));
  try {
    const floor = new Floor(path.join(repo, 'bench', 'floor.c'), path.join(scratch, 'floor-build'), PRIMARY_FILE, PLUGIN_FILE);
    const storms: Record<string, Storm[]> = { A: [], B: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? programs : [...programs].reverse();
      for (const [label, program] of order) {
        process.stderr.write(`round ${r + 1}/${ROUNDS}: ${label}, ${PER} storms of ${FILES}\n`);
        storms[label]!.push(...(await round(scratch, floor, `${label}-${r}`, program)));
      }
    }
    const kinds: ThreadKind[] = ['main', 'pool', 'v8', 'other'];
    const wall = (l: string) => median(storms[l]!.map((s) => s.wallMs));
    const cpu = (l: string) => median(storms[l]!.map((s) => s.cpuUsPerFile));
    const by = (l: string, k: ThreadKind) => median(storms[l]!.map((s) => s.cpuUsPerFileBy[k]));
    const lines = [
      `storm pairs: ${ROUNDS} rounds of ${PER} storms of ${FILES} files each, medians`,
      '',
      `| program | storm: all patched ms | CPU µs per file | ${kinds.join(' | ')} | never patched |`,
      `|---|---:|---:|${kinds.map(() => '---:').join('|')}|---:|`,
      ...programs.map(([l, p]) => `| ${l}: ${path.relative(repo, p)} | ${f(wall(l), 1)} | ${f(cpu(l), 1)} | ${kinds.map((k) => f(by(l, k), 1)).join(' | ')} | ${storms[l]!.reduce((a, s) => a + s.missed, 0)} |`),
      `| A / B | ${f(wall('A') / wall('B'), 3)}x | ${f(cpu('A') / cpu('B'), 3)}x | ${kinds.map((k) => (by('B', k) > 0 ? `${f(by('A', k) / by('B', k), 2)}x` : '-')).join(' | ')} | |`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`storm pairs failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
