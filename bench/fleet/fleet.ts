// `npm run fleet -- [--nodes 300] [--scenarios scale-up,rollout,outage,fight] [--outage-s 60]
//                   [--fight-s 300] [--out bench/results]`
//
// A fleet on one machine (issue 55): one real etcd and kube-apiserver from the pinned tools module
// (scripts/build-cluster.sh, cached), deploy/base applied, and N agents as host processes, each on its
// own scratch host tree with a primary conflist, its own Node (registered with the startup taint) and
// its own pod bound to that Node, with the token the API server issues for it. No kubelet: the agents
// run where the pods are "scheduled". What the API server says of it (apiserver_request_total,
// request latency, watches) and what the agents do (time to untaint, requests, Events, CPU, memory).
// A bench, not a test: the figures go to docs/performance.md with the command that made them.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clusterBinDir } from '../cluster/control-plane.js';
import { cli, option, PLUGIN_FILE, PRIMARY, repo } from '../options.js';
import { AgentCpu } from './agent-cpu.js';
import { FleetCluster } from './fleet-cluster.js';
import { fight, outage, rollout, scaleUp, type FleetContext } from './scenarios.js';

const NODES = Number(option('nodes', '300'));
const SCENARIOS = option('scenarios', 'scale-up,rollout,outage,fight').split(',');
const OUTAGE_S = Number(option('outage-s', '60'));
const FIGHT_S = Number(option('fight-s', '300'));
const OUT = path.resolve(option('out', path.join(repo, 'bench', 'results')));

// Each agent holds an inotify instance, and the kernel counts them per user: past
// fs.inotify.max_user_instances (128 by default) inotify_init1 fails with EMFILE (inotify(7)). On a
// cluster each agent is root on a node of its own; here every agent is the same root. Raised for the
// run when too low (N agents, a rollout batch beside them, and the machine's own) and put back after.
const INOTIFY_INSTANCES = '/proc/sys/fs/inotify/max_user_instances';

function raiseInotifyInstances(needed: number): () => void {
  const was = Number(readFileSync(INOTIFY_INSTANCES, 'utf8').trim());
  if (was >= needed) return () => {};
  try {
    writeFileSync(INOTIFY_INSTANCES, String(needed));
  } catch (err) {
    throw new Error(`${NODES} agents need ${INOTIFY_INSTANCES} >= ${needed} (it is ${was}) and it cannot be raised here (${(err as Error).message}): run as root, or with fewer --nodes`);
  }
  process.stdout.write(`fleet: ${INOTIFY_INSTANCES} raised from ${was} to ${needed} for the run\n`);
  return () => writeFileSync(INOTIFY_INSTANCES, String(was));
}

// What a run leaves until it ends: undone in reverse order at its end, or at SIGINT or SIGTERM (the
// agents are host processes: nothing else would stop them).
const cleanups: Array<() => unknown> = [];

async function cleanUp(): Promise<void> {
  for (const undo of cleanups.splice(0).reverse()) {
    try {
      await undo();
    } catch (err) {
      process.stderr.write(`fleet: cleaning up: ${(err as Error).message}\n`);
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`fleet: ${signal}: stopping the agents and the control plane\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

async function main(): Promise<void> {
  cleanups.push(raiseInotifyInstances(Math.ceil(NODES * 1.2) + 128));
  try {
    await run();
  } finally {
    await cleanUp();
  }
}

async function run(): Promise<void> {
  const bin = clusterBinDir();
  const dir = mkdtempSync(path.join(tmpdir(), 'cc-fleet-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const cluster = await FleetCluster.start(path.join(dir, 'control-plane'), bin, repo);
  cleanups.push(() => cluster.stop());
  const cpu = AgentCpu.create();
  cleanups.push(() => cpu.remove());
  const ctx: FleetContext = {
    cluster,
    agents: new Map(),
    nodes: Array.from({ length: NODES }, (_, i) => `fleet-${String(i).padStart(4, '0')}`),
    dir,
    cli,
    pluginFile: PLUGIN_FILE,
    primary: PRIMARY,
    api: { host: '127.0.0.1', port: Number(new URL(cluster.server).port), ca: cluster.ca },
    pods: 0,
    podOf: new Map(),
    cpu,
  };
  cleanups.push(() => Promise.all([...ctx.agents.values()].map((a) => a.stop('SIGKILL'))));
  mkdirSync(path.join(dir, 'nodes'), { recursive: true });
  const results: Record<string, unknown> = { nodes: NODES, date: new Date().toISOString(), cpus: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()) };
  try {
    // The scale-up starts the fleet: every other scenario needs it.
    results['scale-up'] = await scaleUp(ctx);
    report('scale-up', results['scale-up']);
    if (SCENARIOS.includes('rollout')) report('rollout', (results.rollout = await rollout(ctx)));
    if (SCENARIOS.includes('fight')) report('fight', (results.fight = await fight(ctx, FIGHT_S)));
    if (SCENARIOS.includes('outage')) report('outage', (results.outage = await outage(ctx, OUTAGE_S)));
  } finally {
    await cleanUp();
  }
  mkdirSync(OUT, { recursive: true });
  const file = path.join(OUT, `fleet-${NODES}-${Date.now()}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`fleet: results in ${file}\n`);
}

function report(name: string, figures: unknown): void {
  process.stdout.write(`\n## ${name}\n${JSON.stringify(figures, null, 2)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`fleet: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
