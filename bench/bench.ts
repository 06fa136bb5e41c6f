// `npm run bench` (docs/performance.md): the agent against the physical floor and a reference agent.
// On the default disk and on tmpfs, a C program does the agent's minimal syscalls for the same files
// (bench/floor.c); then the real agent runs against a scratch host tree while a C writer plays the
// primary CNI and an independent inotify observer records when each patched file lands. On tmpfs the
// bench also runs the reference, bench/bare-agent.ts: bundled and started like the agent, health
// server listening, doing only the same watch, read, planning and writes. Also: the watchers alone,
// start (exec to the first pre-existing config patched, against a bare `node -e ''`), memory split
// into anonymous and file-backed next to a bare node:http server, and idle CPU. Every target is a
// ratio or a difference within this one run, with pass/fail; each storm is repeated and its median
// kept. Options: bench/options.ts.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bareNodeDir, bareNodeMemory } from './bare-node.js';
import { cdfSvg } from './cdf-svg.js';
import { Floor, medianFloorStorm, type FloorStorm } from './floor.js';
import { freePort } from './free-port.js';
import { SCALE, STORM_SCALE, BACKENDS, DISKS, FILES, IDLE_S, INTERVAL_MS, OUT, PACED, PLUGIN_FILE, PRIMARY_FILE, repo, REPEAT, TMP } from './options.js';
import { benchAgainstReference, benchBackend, idleCpu, pad, startTime, type BackendResult } from './phases.js';
import { startScaling } from './start-scaling.js';
import { stormScaling } from './storm-scaling.js';
import { report, type DiskResult, type RunResult } from './report.js';
import type { Summary } from './stats.js';
import { watcherLatency } from './watchers.js';

function fsType(dir: string): string {
  try {
    return execFileSync('findmnt', ['-n', '-o', 'FSTYPE', '-T', dir], { encoding: 'utf8' }).trim().split('\n')[0]!;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const base = mkdtempSync(path.join(TMP, 'cni-chainer-bench-'));
  const tmpfsRoot = existsSync('/dev/shm') ? mkdtempSync(path.join('/dev/shm', 'cni-chainer-bench-')) : undefined;
  try {
    const floor = new Floor(path.join(repo, 'bench', 'floor.c'), path.join(base, 'floor-build'), PRIMARY_FILE, PLUGIN_FILE);
    const disks: DiskResult[] = [];
    for (const disk of DISKS) {
      const scratch = disk === 'tmpfs' ? tmpfsRoot : base;
      if (scratch === undefined) continue;
      const backends: BackendResult[] = [];
      // On tmpfs the agent runs in turns with the reference and the floor (phases.ts,
      // benchAgainstReference): there the CPU is the agent's; on a disk it is the journal's, and the
      // reference is not run.
      const withReference = disk === 'tmpfs' && BACKENDS.includes('native');
      let floorStorm: FloorStorm;
      let floorPaced: Summary;
      let reference: BackendResult | undefined;
      if (withReference) {
        process.stderr.write(`[${disk}] the native agent, the reference and the floor in turns: ${REPEAT} storms of ${FILES} each, then ${PACED} paced\n`);
        const turns = await benchAgainstReference(floor, path.join(scratch, disk));
        ({ floorStorm, floorPaced, reference } = turns);
        backends.push(turns.agent);
      } else {
        process.stderr.write(`[${disk}] floor: ${FILES} patches (1/4/16 threads), ${PACED} paced\n`);
        floorStorm = medianFloorStorm(Array.from({ length: REPEAT }, () => floor.storm(scratch, FILES)));
        floorPaced = floor.paced(scratch, PACED, INTERVAL_MS);
      }
      for (const backend of BACKENDS) {
        if (!(withReference && backend === 'native')) backends.push(await benchBackend(floor, backend, path.join(scratch, disk)));
      }
      disks.push({ disk, filesystem: fsType(scratch), floorStorm, floorPaced, backends, reference });
    }
    const scratch = tmpfsRoot ?? base;
    const watchDir = path.join(scratch, 'watchers');
    mkdirSync(watchDir, { recursive: true });
    process.stderr.write(`watchers alone: ${PACED} renames each\n`);
    const watchers = await watcherLatency(watchDir, Array.from({ length: PACED }, (_, i) => `${pad(i)}.conflist`), 2, (job) => floor.write(job));
    process.stderr.write('start: 5 runs each\n');
    const start = await startTime(scratch);
    process.stderr.write(`start with ${SCALE.join(' and ')} existing configs (10% .conf): 3 runs each\n`);
    const scaling = await startScaling(scratch);
    process.stderr.write(`storms of ${STORM_SCALE.join(' and ')} files, interleaved, ${REPEAT} each\n`);
    const stormScale = await stormScaling(floor, scratch);
    process.stderr.write('memory baseline: a bare node:http server, 3 runs\n');
    const bareNode = await bareNodeMemory(bareNodeDir(scratch), { PATH: process.env.PATH, HEALTH_PORT: String(await freePort()), MALLOC_ARENA_MAX: '2', UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' });
    process.stderr.write(`idle: ${IDLE_S} s\n`);
    const idleCpuS = IDLE_S > 0 ? await idleCpu(scratch) : 0;

    const run: RunResult = { disks, watchers, start, scaling, stormScale, bareNode, idleCpuS };
    const text = report(run);
    process.stdout.write(text);
    mkdirSync(OUT, { recursive: true });
    const json = {
      date: new Date().toISOString(),
      args: process.argv.slice(2),
      ...run,
      disks: disks.map((d) => ({ ...d, backends: d.backends.map((b) => ({ ...b, paced: { latency: b.paced.latency, missed: b.paced.missed } })) })),
    };
    writeFileSync(path.join(OUT, 'bench.json'), `${JSON.stringify(json, null, 2)}\n`);
    writeFileSync(path.join(OUT, 'bench.md'), text);
    const first = disks[0];
    if (first !== undefined) {
      writeFileSync(path.join(OUT, 'latency-cdf-paced.svg'), cdfSvg(`${PACED} conflists, one every ${INTERVAL_MS} ms (${first.disk}): rename → patched`, Object.fromEntries(first.backends.map((b) => [b.backend, b.paced.samples]))));
    }
    process.stderr.write(`wrote ${path.join(OUT, 'bench.json')}, bench.md and the paced latency CDF (SVG)\n`);
  } finally {
    rmSync(base, { recursive: true, force: true });
    if (tmpfsRoot !== undefined) rmSync(tmpfsRoot, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
