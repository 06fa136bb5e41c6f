// Storms of two programs or more in interleaved rounds (docs/performance.md, "Storm pairs"): by
// default the agent and the reference (bench/bare-agent.ts), or any bundles, e.g. a build of the code
// before a change copied aside against the build after it, and (--c, --d, --e) builds with one part
// cut out, to see what that part costs. This machine's speed swings several-fold between minutes, so
// one program's storms are never all run in one stretch: each round starts a fresh process of each,
// in an order that reverses every round, and runs `--per` storms of `--files` new files on tmpfs, each
// storm's files removed before the next. Printed: the medians of wall time (first rename to last
// patched) and CPU per file by thread, each program's ratios to B; then the same by a storm's place
// after start, since the first storm after a start also pays for V8 compiling what it runs.
//
//   npm run build && node dist/bench/storm-pairs.js [--rounds 4] [--per 5] [--files 1000]
//     [--a dist/cni-chainer.mjs] [--b dist/bench/bare-agent.mjs] [--c X.mjs] [--d Y.mjs] [--e Z.mjs]
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, type ThreadKind } from './agent.js';
import { Floor } from './floor.js';
import { Observer } from './observer.js';
import { bareAgent, cli, FILES, option, PLUGIN_FILE, PRIMARY_FILE, repo } from './options.js';
import { agentEnv, f, hostTree, inTurn, median, pad, storm, type Storm } from './phases.js';

const ROUNDS = Number(option('rounds', '4'));
const PER = Number(option('per', '5'));
/** B is what the others are compared with: the reference, unless --b says otherwise. */
const programs: Array<[string, string]> = [
  ['A', path.resolve(option('a', cli))],
  ['B', path.resolve(option('b', bareAgent))],
  ...['c', 'd', 'e'].flatMap((l): Array<[string, string]> => {
    const program = option(l, '');
    return program === '' ? [] : [[l.toUpperCase(), path.resolve(program)]];
  }),
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
    const storms: Record<string, Storm[]> = Object.fromEntries(programs.map(([label]) => [label, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [label, program] of inTurn(programs, r)) {
        process.stderr.write(`round ${r + 1}/${ROUNDS}: ${label}, ${PER} storms of ${FILES}\n`);
        storms[label]!.push(...(await round(scratch, floor, `${label}-${r}`, program)));
      }
    }
    const lines = [
      `storm pairs: ${ROUNDS} rounds of ${PER} storms of ${FILES} files each, medians`,
      '',
      ...table(programs, storms),
      '',
      `by the storm's place after start (each a median of ${ROUNDS}): the first also pays for V8 compiling what it runs`,
      '',
      ...byPlace(programs, storms),
      '',
    ];
    process.stdout.write(lines.join('\n'));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const KINDS: ThreadKind[] = ['main', 'pool', 'v8', 'other'];

/** The medians of `list`: wall time, CPU per file, and CPU per file by kind of thread. */
function medians(list: Storm[]): { wallMs: number; cpuUsPerFile: number; by: Record<ThreadKind, number> } {
  const by = Object.fromEntries(KINDS.map((k) => [k, median(list.map((s) => s.cpuUsPerFileBy[k]))])) as Record<ThreadKind, number>;
  return { wallMs: median(list.map((s) => s.wallMs)), cpuUsPerFile: median(list.map((s) => s.cpuUsPerFile)), by };
}

/** One row per program, then each other program's ratios to B. */
function table(programs: Array<[string, string]>, storms: Record<string, Storm[]>): string[] {
  const m = (l: string) => medians(storms[l]!);
  const b = m('B');
  return [
    `| program | storm: all patched ms | CPU µs per file | ${KINDS.join(' | ')} | never patched |`,
    `|---|---:|---:|${KINDS.map(() => '---:').join('|')}|---:|`,
    ...programs.map(([l, p]) => {
      const x = m(l);
      return `| ${l}: ${path.relative(repo, p)} | ${f(x.wallMs, 1)} | ${f(x.cpuUsPerFile, 1)} | ${KINDS.map((k) => f(x.by[k], 1)).join(' | ')} | ${storms[l]!.reduce((a, s) => a + s.missed, 0)} |`;
    }),
    ...programs
      .filter(([l]) => l !== 'B')
      .map(([l]) => {
        const x = m(l);
        return `| ${l} / B | ${f(x.wallMs / b.wallMs, 3)}x | ${f(x.cpuUsPerFile / b.cpuUsPerFile, 3)}x | ${KINDS.map((k) => (b.by[k] > 0 ? `${f(x.by[k] / b.by[k], 2)}x` : '-')).join(' | ')} | |`;
      }),
  ];
}

/** Storm k of every round (each round's programs start afresh), per program: wall, CPU, and its ratios to B's storm k. */
function byPlace(programs: Array<[string, string]>, storms: Record<string, Storm[]>): string[] {
  const at = (l: string, k: number) => medians(storms[l]!.filter((_, i) => i % PER === k));
  const rows: string[] = ['| storm after start | program | all patched ms | CPU µs per file | main | v8 | wall / B | CPU / B |', '|---:|---|---:|---:|---:|---:|---:|---:|'];
  for (let k = 0; k < PER; k++) {
    const b = at('B', k);
    for (const [l] of programs) {
      const x = l === 'B' ? b : at(l, k);
      const ratios = l === 'B' ? '| |' : `| ${f(x.wallMs / b.wallMs, 2)}x | ${f(x.cpuUsPerFile / b.cpuUsPerFile, 2)}x |`;
      rows.push(`| ${k + 1} | ${l} | ${f(x.wallMs, 1)} | ${f(x.cpuUsPerFile, 1)} | ${f(x.by.main, 1)} | ${f(x.by.v8, 1)} ${ratios}`);
    }
  }
  return rows;
}

main().catch((err: unknown) => {
  process.stderr.write(`storm pairs failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
