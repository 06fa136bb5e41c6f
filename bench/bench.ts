// `npm run bench`: the event-storm benchmark. For each watch backend, the real agent runs against a
// scratch host tree while a writer thread plays the primary CNI; an independent inotify observer
// records when each patched file lands. Prints a table, writes JSON and an SVG latency CDF.
//
//   npm run bench -- [--files 1000] [--rewrite-files 200] [--rewrites 4] [--paced 200]
//                    [--interval-ms 5] [--idle-s 10] [--backends native,parcel] [--out bench/results]
//                    [--tmp DIR]
import { execFileSync } from 'node:child_process';
import { cpus, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { isTempName } from '../src/cni/names.js';
import { NativeWatcher } from '../src/watch/native.js';
import type { WatchBackendName } from '../src/watch/watcher.js';
import { Agent } from './agent.js';
import { cdfSvg } from './cdf-svg.js';
import { summarize, type Summary } from './stats.js';
import type { WriterJob, WriterResult } from './writer.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const cli = path.join(repo, 'dist', 'cni-chainer.mjs');

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}
const FILES = Number(option('files', '1000'));
const REWRITE_FILES = Number(option('rewrite-files', '200'));
// Below the fight threshold (5 reverts in 10 s): more rewrites than that measure the backoff instead.
const REWRITES = Number(option('rewrites', '4'));
const PACED = Number(option('paced', '200'));
const INTERVAL_MS = Number(option('interval-ms', '5'));
const IDLE_S = Number(option('idle-s', '10'));
const BACKENDS = option('backends', 'native,parcel').split(',') as WatchBackendName[];
const OUT = path.resolve(option('out', path.join(repo, 'bench', 'results')));
// Where the scratch host tree lives: the default temp dir (a disk, where fsync costs a journal
// commit), or e.g. /dev/shm (tmpfs, where fsync is free) to see the agent's own overhead.
const TMP = option('tmp', tmpdir());

const PLUGIN = readFileSync(path.join(repo, 'test', 'fixtures', 'plugin', 'linkerd-cni.json'), 'utf8');
const PRIMARY = readFileSync(path.join(repo, 'test', 'fixtures', 'conflists', '10-calico.conflist'), 'utf8');

/** Records, per file, when the agent's rename of it (from one of its temp names) lands. */
class Observer {
  private readonly movedOut = new Map<number, string>();
  readonly landings = new Map<string, bigint[]>();
  private readonly watcher: NativeWatcher;

  constructor(dir: string) {
    this.watcher = new NativeWatcher((events) => {
      const now = process.hrtime.bigint();
      for (const e of events) {
        if (e.kind === 'moved-out') this.movedOut.set(e.cookie, e.name);
        if (e.kind !== 'moved-in') continue;
        const from = this.movedOut.get(e.cookie);
        this.movedOut.delete(e.cookie);
        if (from === undefined || !isTempName(from) || isTempName(e.name)) continue;
        const list = this.landings.get(e.name) ?? [];
        list.push(now);
        this.landings.set(e.name, list);
      }
    });
    this.watcher.watchSync(dir);
  }

  /** The first landing of `name` after `after`. */
  landingAfter(name: string, after: bigint): bigint | undefined {
    return this.landings.get(name)?.find((t) => t > after);
  }

  count(): number {
    let n = 0;
    for (const list of this.landings.values()) n += list.length;
    return n;
  }

  close(): Promise<void> {
    return this.watcher.close();
  }
}

function runWriter(job: WriterJob): Promise<WriterResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(path.join(here, 'writer.js'), { workerData: job });
    worker.once('message', (result: WriterResult) => resolve(result));
    worker.once('error', reject);
  });
}

async function until(what: string, test: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function chained(file: string): boolean {
  try {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { plugins: Array<{ type: string }> };
    return doc.plugins.at(-1)?.type === 'linkerd-cni';
  } catch {
    return false;
  }
}

interface Phase {
  latency: Summary;
  samples: number[];
  cpuSeconds: number;
  wallSeconds: number;
  correct: boolean;
  writerWrites: number;
  agentWrites: number;
}

/** Writes `names` (rounds times each) and waits until the agent has patched the final version of each. */
async function phase(agent: Agent, observer: Observer, netDir: string, names: string[], rounds: number, intervalMs: number): Promise<Phase> {
  const cpu0 = agent.cpuSeconds();
  const writes0 = observer.count();
  const t0 = process.hrtime.bigint();
  const result = await runWriter({ dir: netDir, names, text: PRIMARY, rounds, intervalMs });
  const renamedAt = new Map(Object.entries(result.renamedAt).map(([k, v]) => [k, BigInt(v)]));
  await until('every file patched', () => names.every((n) => observer.landingAfter(n, renamedAt.get(n)!) !== undefined));
  const end = process.hrtime.bigint();
  const samples = names.map((n) => Number(observer.landingAfter(n, renamedAt.get(n)!)! - renamedAt.get(n)!) / 1e6);
  return {
    latency: summarize(samples),
    samples,
    cpuSeconds: agent.cpuSeconds() - cpu0,
    wallSeconds: Number(end - t0) / 1e9,
    correct: names.every((n) => chained(path.join(netDir, n))),
    writerWrites: result.writes,
    agentWrites: observer.count() - writes0,
  };
}

async function benchBackend(backend: WatchBackendName, scratch: string) {
  const hostRoot = path.join(scratch, backend, 'host');
  const netDir = path.join(hostRoot, 'etc', 'cni', 'net.d');
  const bin = path.join(scratch, backend, 'bin');
  mkdirSync(netDir, { recursive: true });
  mkdirSync(bin, { recursive: true });
  writeFileSync(path.join(bin, 'linkerd-cni'), '#!/bin/sh\n', { mode: 0o755 });
  const env = {
    PATH: process.env.PATH,
    CONTAINER_MOUNT_PREFIX: hostRoot,
    CONTAINER_CNI_BIN_DIR: bin,
    SERVICEACCOUNT_PATH: path.join(scratch, 'no-serviceaccount'),
    CNI_NETWORK_CONFIG: PLUGIN,
    HEALTH_PORT: '0',
    RESYNC_INTERVAL_S: '0',
    WATCH_BACKEND: backend,
    // As the image sets it (Dockerfile): fsyncs of a storm overlap on libuv's pool.
    UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16',
  };
  const observer = new Observer(netDir);
  // For profiling the agent: BENCH_AGENT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = (process.env.BENCH_AGENT_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const agent = new Agent(cli, env, path.join(scratch, backend), 'agent', nodeArgs);
  await agent.waitForLog('started');
  const startRssMiB = agent.rssMiB();

  const pad = (i: number) => String(i).padStart(5, '0');
  // Each phase starts on a quiet agent and disk: what one phase leaves behind (the events of the
  // agent's own renames, the journal's backlog) must not be charged to the next.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));
  process.stderr.write(`[${backend}] storm: ${FILES} new files\n`);
  const storm = await phase(agent, observer, netDir, Array.from({ length: FILES }, (_, i) => `${pad(i)}-storm.conflist`), 1, 0);
  await settle();
  process.stderr.write(`[${backend}] paced: ${PACED} new files, one every ${INTERVAL_MS} ms\n`);
  const paced = await phase(agent, observer, netDir, Array.from({ length: PACED }, (_, i) => `${pad(i)}-paced.conflist`), 1, INTERVAL_MS);
  await settle();
  process.stderr.write(`[${backend}] rewrite storm: ${REWRITE_FILES} files x ${REWRITES}\n`);
  const rewriteNames = Array.from({ length: REWRITE_FILES }, (_, i) => `${pad(i)}-storm.conflist`);
  const rewrite = await phase(agent, observer, netDir, rewriteNames, REWRITES, 0);

  process.stderr.write(`[${backend}] idle for ${IDLE_S} s\n`);
  // V8 finishes its lazy compilation and GC of the storms within a few seconds; then it is idle.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const idle0 = agent.cpuSeconds();
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000));
  const idleCpuSeconds = agent.cpuSeconds() - idle0;
  const peakRssMiB = agent.peakRssMiB();
  const shutdown = await agent.stop();
  const cleaned = [...rewriteNames, `${pad(0)}-paced.conflist`].every((n) => !readFileSync(path.join(netDir, n), 'utf8').includes('linkerd-cni'));
  await observer.close();
  return { backend, storm, paced, rewrite, idleCpuSeconds, startRssMiB, peakRssMiB, shutdown: { ...shutdown, filesCleaned: FILES + PACED, cleaned } };
}

type Result = Awaited<ReturnType<typeof benchBackend>>;

const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '-');

function table(results: Result[]): string {
  const rows = [
    '| backend | scenario | n | p50 ms | p95 ms | p99 ms | max ms | agent CPU s | wall s | correct |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of results) {
    for (const [name, p] of [['storm', r.storm], ['paced', r.paced], ['rewrite', r.rewrite]] as const) {
      rows.push(`| ${r.backend} | ${name} | ${p.latency.n} | ${f(p.latency.p50)} | ${f(p.latency.p95)} | ${f(p.latency.p99)} | ${f(p.latency.max)} | ${f(p.cpuSeconds)} | ${f(p.wallSeconds)} | ${p.correct ? 'yes' : 'NO'} |`);
    }
  }
  const native = results.find((r) => r.backend === 'native');
  const lines = [rows.join('\n'), ''];
  lines.push('| backend | idle CPU s / ' + IDLE_S + ' s | RSS after start MiB | peak RSS MiB | rewrite: writer writes → agent writes | SIGTERM cleanup of ' + (FILES + PACED) + ' files |', '|---|---:|---:|---:|---|---|');
  for (const r of results) {
    lines.push(`| ${r.backend} | ${f(r.idleCpuSeconds, 3)} | ${f(r.startRssMiB, 1)} | ${f(r.peakRssMiB, 1)} | ${r.rewrite.writerWrites} → ${r.rewrite.agentWrites} | exit ${r.shutdown.code} in ${r.shutdown.ms} ms${r.shutdown.cleaned ? '' : ' (NOT clean)'} |`);
  }
  for (const r of results.filter((x) => x !== native && native !== undefined)) {
    lines.push('');
    for (const scenario of ['storm', 'paced', 'rewrite'] as const) {
      const [a, b] = [r[scenario].latency, native![scenario].latency];
      lines.push(`${r.backend}/native ${scenario}: p50 ${f(a.p50 / b.p50, 1)}x, p95 ${f(a.p95 / b.p95, 1)}x, p99 ${f(a.p99 / b.p99, 1)}x`);
    }
  }
  return lines.join('\n');
}

function machine(dir: string): Record<string, string> {
  const fsType = (() => {
    try {
      return execFileSync('findmnt', ['-n', '-o', 'FSTYPE', '-T', dir], { encoding: 'utf8' }).trim().split('\n')[0]!;
    } catch {
      return 'unknown';
    }
  })();
  return { node: process.version, cpus: `${cpus().length} x ${cpus()[0]?.model ?? '?'}`, kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(), filesystem: fsType };
}

/** The disk's own floor for one patch: the agent's syscalls, paced like the paced phase, no agent. */
async function floor(scratch: string): Promise<Summary> {
  const dir = path.join(scratch, 'floor');
  mkdirSync(dir);
  const names = Array.from({ length: PACED }, (_, i) => `${String(i).padStart(5, '0')}-floor.conflist`);
  const result = await runWriter({ dir, names, text: PRIMARY, rounds: 1, intervalMs: INTERVAL_MS, floor: true });
  return summarize(result.floorMs ?? []);
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(path.join(TMP, 'cni-chainer-bench-'));
  try {
    process.stderr.write(`floor: the agent's disk syscalls for ${PACED} files, no agent\n`);
    const floorLatency = await floor(scratch);
    const results: Result[] = [];
    for (const backend of BACKENDS) results.push(await benchBackend(backend, scratch));
    const env = machine(scratch);
    const header = `cni-chainer bench: ${FILES} new files (storm), ${PACED} paced (every ${INTERVAL_MS} ms), ${REWRITE_FILES} files x ${REWRITES} rewrites; fsync on; ${env.filesystem} on ${env.cpus}, Linux ${env.kernel}, Node ${env.node}`;
    const l = floorLatency;
    const floorLine = `floor (no agent: the same temp file, fsync, rename and directory fsync, paced): p50 ${f(l.p50)} ms, p95 ${f(l.p95)} ms, p99 ${f(l.p99)} ms, max ${f(l.max)} ms`;
    const text = `${header}\n\n${table(results)}\n\n${floorLine}\n`;
    process.stdout.write(text);
    mkdirSync(OUT, { recursive: true });
    const json = { date: new Date().toISOString(), args: process.argv.slice(2), machine: env, floor: floorLatency, results: results.map((r) => ({ ...r, storm: { ...r.storm, samples: undefined }, paced: { ...r.paced, samples: undefined }, rewrite: { ...r.rewrite, samples: undefined } })) };
    writeFileSync(path.join(OUT, 'bench.json'), `${JSON.stringify(json, null, 2)}\n`);
    writeFileSync(path.join(OUT, 'latency-cdf.svg'), cdfSvg(`Storm of ${FILES} new conflists: rename → patched`, Object.fromEntries(results.map((r) => [r.backend, r.storm.samples]))));
    writeFileSync(path.join(OUT, 'latency-cdf-paced.svg'), cdfSvg(`${PACED} conflists, one every ${INTERVAL_MS} ms: rename → patched`, Object.fromEntries(results.map((r) => [r.backend, r.paced.samples]))));
    process.stderr.write(`wrote ${path.join(OUT, 'bench.json')} and the latency CDFs (SVG)\n`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
