// The fleet's four scenarios (issue 55): what N agents do to one API server when every node does the
// same thing at once. Each returns its figures: the API server's (every client's requests, p99
// latency, watches open) and the agents' (their requests by verb and resource from the audit log, per
// node, and the answers that failed; time to untaint, Events, CPU, memory).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { latencyQuantile, requestsBetween, total, type Scrape } from './apiserver-metrics.js';
import { byKey as requestsByKey, failures, perNode, perSecond, type AgentRequest } from './audit-log.js';
import type { AgentCpu } from './agent-cpu.js';
import { FleetAgent } from './fleet-agent.js';
import { inParallel, type FleetCluster } from './fleet-cluster.js';

export interface FleetContext {
  cluster: FleetCluster;
  /** The agent running on each node, by node name. */
  agents: Map<string, FleetAgent>;
  nodes: string[];
  dir: string;
  cli: string;
  pluginFile: string;
  primary: string;
  api: { host: string; port: number; ca: string };
  /** Pods made so far (each start of an agent has a pod of its own). */
  pods: number;
  /** The pod of the agent running on each node. */
  podOf: Map<string, string>;
  /** Where the agents' CPU comes from (agent-cpu.ts). */
  cpu: AgentCpu;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)]!;
};
const spread = (xs: number[]) => ({ median: median(xs), max: Math.max(0, ...xs), count: xs.length });
const UNTAINTED = 'removed the startup taint: pods may be scheduled on this node';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A new pod on `node`, its token, and an agent started as it (beside any agent already there). */
async function startAgent(ctx: FleetContext, node: string, fresh: boolean): Promise<{ agent: FleetAgent; pod: string }> {
  const pod = await ctx.cluster.createPod(`agent-${ctx.pods++}`, node);
  const token = await ctx.cluster.podToken(pod);
  const agent = new FleetAgent(node, path.join(ctx.dir, 'nodes', node));
  if (fresh) agent.prepare(ctx.primary);
  agent.start({ node, pod: pod.name, token }, ctx.cli, ctx.pluginFile, ctx.api, ctx.cpu);
  return { agent, pod: pod.name };
}

/** Waits until no node carries the startup taint; when the last one lost it (ms since `since`). */
async function untainted(ctx: FleetContext, since: number, timeoutMs: number): Promise<number> {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(250)) {
    if ((await ctx.cluster.tainted()).size === 0) return Date.now() - since;
    if (Date.now() > deadline) throw new Error(`${(await ctx.cluster.tainted()).size} nodes still tainted after ${timeoutMs} ms`);
  }
}

/** The API server's own figures between two scrapes: every client, this bench's calls included. */
function serverFigures(before: Scrape, after: Scrape) {
  return {
    allClientsRequests: total(requestsBetween(before, after), (key) => !key.startsWith('GET metrics')),
    p99LatencyS: latencyQuantile(before, after, 0.99),
    watchesOpen: after.watches,
  };
}

/** What the agents asked of the API server. */
function requestFigures(requests: AgentRequest[], nodes: number) {
  const node = perNode(requests, nodes);
  return {
    agentRequests: requestsByKey(requests),
    agentRequestsPerNode: node.mean,
    agentRequestsMaxOneNode: node.max,
    agentFailures: failures(requests),
    agentWatches: requests.filter((r) => r.key.startsWith('WATCH')).length,
  };
}

function agentFigures(agents: FleetAgent[], cpuBefore: Map<FleetAgent, number>) {
  const cpu = agents.map((a) => a.cpuMs() - (cpuBefore.get(a) ?? 0));
  const memory = agents.map((a) => a.memoryKiB());
  return {
    cpuMsPerAgent: median(cpu),
    rssMiBPerAgent: median(memory.map((m) => m.rss)) / 1024,
    anonMiBPerAgent: median(memory.map((m) => m.anon)) / 1024,
  };
}

/** The pods of `nodes` and their tokens, made before any agent starts. */
function identitiesFor(ctx: FleetContext, nodes: string[]) {
  return inParallel(nodes, 16, async (node) => {
    const pod = await ctx.cluster.createPod(`agent-${ctx.pods++}`, node);
    return { node, pod: pod.name, token: await ctx.cluster.podToken(pod) };
  });
}

/** Starts an agent per identity, on the node's existing tree (or a `fresh` one). */
function startAgents(ctx: FleetContext, identities: Array<{ node: string; pod: string; token: string }>, fresh: boolean): void {
  for (const identity of identities) {
    const agent = new FleetAgent(identity.node, path.join(ctx.dir, 'nodes', identity.node));
    if (fresh) agent.prepare(ctx.primary);
    agent.start(identity, ctx.cli, ctx.pluginFile, ctx.api, ctx.cpu);
    ctx.agents.set(identity.node, agent);
    ctx.podOf.set(identity.node, identity.pod);
  }
}

/** 1. All N nodes join at once (their pods and tokens made first): each untainted once. */
export async function scaleUp(ctx: FleetContext) {
  await inParallel(ctx.nodes, 16, (node) => ctx.cluster.createNode(node));
  const identities = await identitiesFor(ctx, ctx.nodes);
  const before = await ctx.cluster.scrape();
  const mark = ctx.cluster.audit.mark();
  const began = Date.now();
  startAgents(ctx, identities, true);
  const lastUntaintMs = await untainted(ctx, began, 600_000);
  const agents = [...ctx.agents.values()];
  // The rest of each start: the node's token asked for, the Chained Event posted.
  await Promise.all(agents.map((a) => Promise.race([a.until('the kubeconfig carries a token bound to this node: it outlives this pod'), sleep(60_000)])));
  await sleep(2_000);
  const after = await ctx.cluster.scrape();
  const events = await ctx.cluster.events();
  return {
    nodes: ctx.nodes.length,
    lastUntaintMs,
    ...requestFigures(ctx.cluster.audit.since(mark), ctx.nodes.length),
    ...serverFigures(before, after),
    eventsPosted: events.length,
    ...agentFigures(agents, new Map()),
    untaintMsAfterStart: spread(agents.map((a) => a.msAfterStart(UNTAINTED)).filter((ms): ms is number => ms !== undefined)),
    untaintedTwice: agents.filter((a) => a.count(UNTAINTED) > 1).length,
  };
}

/** Samples every node's config every `everyMs` while `during` runs: how many samples found one unchained. */
async function sampleChained(ctx: FleetContext, during: Promise<unknown>, everyMs = 100): Promise<{ samples: number; unchained: number }> {
  let done = false;
  void during.finally(() => (done = true)).catch(() => {});
  let samples = 0;
  let unchained = 0;
  while (!done) {
    for (const agent of ctx.agents.values()) {
      samples++;
      try {
        if (!readFileSync(agent.config, 'utf8').includes('"linkerd-cni"')) unchained++;
      } catch {
        unchained++;
      }
    }
    await sleep(everyMs);
  }
  await during;
  return { samples, unchained };
}

/** 2. Every agent replaced, 10% of the nodes at a time, each with a surge (the new beside the old). */
export async function rollout(ctx: FleetContext) {
  const before = await ctx.cluster.scrape();
  const mark = ctx.cluster.audit.mark();
  const cpuBefore = new Map([...ctx.agents.values()].map((a) => [a, a.cpuMs()]));
  const batch = Math.max(1, Math.ceil(ctx.nodes.length / 10));
  const fresh: FleetAgent[] = [];
  const work = (async () => {
    for (let i = 0; i < ctx.nodes.length; i += batch) {
      await inParallel(ctx.nodes.slice(i, i + batch), 16, async (node) => {
        const old = ctx.agents.get(node)!;
        const { agent, pod } = await startAgent(ctx, node, false);
        fresh.push(agent);
        await agent.until('started');
        // The DaemonSet controller deletes the old pod; the kubelet sends its SIGTERM and removes it.
        await old.stop('SIGTERM');
        await ctx.cluster.deletePod(ctx.podOf.get(node)!);
        ctx.agents.set(node, agent);
        ctx.podOf.set(node, pod);
      });
    }
  })();
  const sampled = await sampleChained(ctx, work);
  await sleep(2_000);
  const after = await ctx.cluster.scrape();
  const agents = [...ctx.agents.values()];
  return {
    batches: Math.ceil(ctx.nodes.length / batch),
    ...requestFigures(ctx.cluster.audit.since(mark), ctx.nodes.length),
    ...serverFigures(before, after),
    ...sampled,
    // The taint came off at the scale-up: a new agent finds it gone and patches nothing.
    untaintedAgain: fresh.reduce((n, a) => n + a.count(UNTAINTED), 0),
    stillTainted: (await ctx.cluster.tainted()).size,
    ...agentFigures(agents, cpuBefore),
  };
}

/**
 * 3. A scale-up whose API server crashes a third of the way in and is started again `outageS` later
 * (the nodes tainted again and every agent started anew, as a node pool replaced): the agents'
 * requests per second once it is back, and every node untainted after.
 */
export async function outage(ctx: FleetContext, outageS: number) {
  await Promise.all([...ctx.agents.values()].map((a) => a.stop('SIGKILL')));
  await inParallel(ctx.nodes, 16, (node) => ctx.cluster.taint(node));
  const identities = await identitiesFor(ctx, ctx.nodes);
  const third = Math.ceil(identities.length / 3);
  const began = Date.now();
  startAgents(ctx, identities.slice(0, third), false);
  await sleep(1_000);
  // A crash, not a graceful stop (which keeps serving for seconds): requests in flight are cut.
  await ctx.cluster.cp.stopComponent('kube-apiserver', 'SIGKILL');
  const stoppedAt = Date.now();
  startAgents(ctx, identities.slice(third), false);
  await sleep(Math.max(0, stoppedAt + outageS * 1000 - Date.now()));
  const mark = ctx.cluster.audit.mark();
  const restartedAt = Date.now();
  await ctx.cluster.cp.startComponent('kube-apiserver');
  const backAt = Date.now();
  const taintedWhenBack = (await ctx.cluster.tainted()).size;
  const lastUntaintMs = await untainted(ctx, backAt, 300_000);
  await sleep(Math.max(0, restartedAt + 32_000 - Date.now()));
  const requests = ctx.cluster.audit.since(mark);
  // Requests received in each second from the restart: the first ones answered once it serves.
  const seconds = perSecond(requests, restartedAt, 30);
  const firstServed = seconds.findIndex((n) => n > 0);
  const first10 = firstServed < 0 ? [] : seconds.slice(firstServed, firstServed + 10);
  return {
    outageS,
    stoppedAfterMs: stoppedAt - began,
    healthyAfterRestartMs: backAt - restartedAt,
    agentRequestsPerSecondFromRestart: seconds,
    byKeyPerSecond: Object.fromEntries([...new Set(requests.map((r) => r.key))].map((key) => [key, perSecond(requests.filter((r) => r.key === key), restartedAt, 30)])),
    first10sMax: Math.max(0, ...first10),
    first10sMedian: median(first10),
    first10sTotal: first10.reduce((a, b) => a + b, 0),
    ...requestFigures(requests, ctx.nodes.length),
    taintedWhenBack,
    lastUntaintAfterReturnMs: lastUntaintMs,
  };
}

/** 4. A primary that fights the agent on 10% of the nodes for `fightS`: Events per node and in all. */
export async function fight(ctx: FleetContext, fightS: number) {
  const fighting = ctx.nodes.filter((_, i) => i % 10 === 0);
  const eventsBefore = await ctx.cluster.events();
  const mark = ctx.cluster.audit.mark();
  const fighter = startFighter(fighting.map((n) => ctx.agents.get(n)!.config), ctx.primary);
  await sleep(fightS * 1000);
  fighter.kill('SIGTERM');
  await sleep(35_000); // the last series updates (every 30 s at most)
  const events = await ctx.cluster.events();
  const known = new Set(eventsBefore.map((e) => `${e.node} ${e.reason}`));
  const fresh = events.filter((e) => !known.has(`${e.node} ${e.reason}`));
  const perNodeEvents = new Map<string, number>();
  for (const e of fresh) perNodeEvents.set(e.node, (perNodeEvents.get(e.node) ?? 0) + 1);
  const writes = ctx.cluster.audit.since(mark).filter((r) => r.key === 'POST events' || r.key === 'PATCH events');
  const writesPerNode = perNode(writes, fighting.length);
  return {
    fightS,
    fightingNodes: fighting.length,
    newEvents: fresh.length,
    newEventsMaxOneNode: Math.max(0, ...perNodeEvents.values()),
    fightSeriesCount: fresh.filter((e) => e.reason === 'Fight').reduce((n, e) => n + e.count, 0),
    eventWrites: requestsByKey(writes),
    eventWritesPerFightingNode: writesPerNode.mean,
    eventWritesMaxOneNode: writesPerNode.max,
    eventWritesPerFightingNodePerMinute: writesPerNode.mean / (fightS / 60),
  };
}

// A primary in Cilium's exclusive mode: writes its own version at start and on any event of its
// config (a temp file and a rename), reverting the agent's patch within milliseconds, for as long as
// it runs.
const FIGHTER = `
const fs = require('fs');
const path = require('path');
// node -e: process.argv[1] is the first argument.
const [primary, ...files] = process.argv.slice(1);
const text = fs.readFileSync(primary, 'utf8');
const restore = (file) => {
  try {
    if (fs.readFileSync(file, 'utf8') === text) return;
    fs.writeFileSync(file + '.fight', text);
    fs.renameSync(file + '.fight', file);
  } catch {}
};
for (const file of files) {
  fs.watch(path.dirname(file), (_, name) => {
    if (name === path.basename(file)) restore(file);
  });
  // As the primary's agent starting: its own version written first.
  restore(file);
}
// The bench holds our stdin: its end, the bench's (however it ended), is ours.
process.stdin.on('end', () => process.exit(0)).resume();
`;

function startFighter(files: string[], primary: string): ChildProcess {
  const primaryFile = path.join(path.dirname(files[0]!), '..', '..', '..', '..', 'fighter-primary.json');
  writeFileSync(primaryFile, primary);
  return spawn(process.execPath, ['-e', FIGHTER, primaryFile, ...files], { stdio: ['pipe', 'ignore', 'ignore'] });
}
