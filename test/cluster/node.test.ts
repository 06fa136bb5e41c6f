// deploy/base on a real single-node cluster: etcd, kube-apiserver, the controller manager, the
// scheduler, containerd 2 and a kubelet, all built from their Go modules (scripts/build-cluster.sh),
// in the node's own namespaces (node-namespace.ts). The image is built from the repo's Dockerfile on
// stand-in bases and loaded into the node's containerd; the manifests are applied with kubectl as
// operators apply them. The primary CNI is containernetworking-plugins' bridge, its conflist written
// into net.d as kind's installer writes it.
//
// The stand-in linkerd-cni in the image records every call, and on each ADD it GETs its pod from
// the API server with the kubeconfig the agent wrote: a pod is meshed when its ADD is recorded, and
// the kubeconfig works when that GET answers 200.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../helpers/fixtures.js';
import { repoRoot } from '../helpers/addon-path.js';
import { waitFor } from '../helpers/wait.js';
import { Buildah, buildUnavailable } from '../image/buildah.js';
import { BUILD_BASE, buildAgentImage, buildBases, buildPluginStandIn, RUNTIME_BASE } from '../image/stand-ins.js';
import { invocations } from '../runtime/test-plugin.js';
import { sampleChained } from './chain-sampler.js';
import { ControlPlane, clusterBinDir } from './control-plane.js';
import { KubeletNode } from './kubelet-node.js';
import { NodeNamespace, nodeUnavailable } from './node-namespace.js';

const NODE = 'node-a';
const NS = 'linkerd-cni';
const TAINT = 'cni-chainer.io/agent-not-ready';
const PRIMARY_NAME = '10-containerd-net.conflist';
const PRIMARY = fixture(PRIMARY_NAME);
/** The manifests' image, as the kubelet resolves it. */
const IMAGE = 'docker.io/library/cni-chainer:0.1.0';
/** Inside the node's namespaces (its /var/log is a tmpfs of its own). */
const PLUGIN_LOG = '/var/log/linkerd-cni-standin.log';
const AGENT = 'app.kubernetes.io/name=cni-chainer';

const reason = nodeUnavailable() ?? buildUnavailable();
if (reason !== undefined) {
  console.warn(`cluster node suite skipped: ${reason}`);
  if (process.env.CI === 'true') throw new Error(`the cluster node suite cannot run in CI: ${reason}`);
}

let dir: string;
let ns: NodeNamespace;
let cp: ControlPlane;
let node: KubeletNode;
let primaryBins: string[];
let podCounter = 0;

function json<T>(args: string[]): T {
  return JSON.parse(cp.kubectl([...args, '-o', 'json'])) as T;
}

function taints(): string[] {
  return (json<{ spec: { taints?: Array<{ key: string }> } }>(['get', 'node', NODE]).spec.taints ?? []).map((t) => t.key);
}

/** kubectl without blocking this loop (the sampler and the pod loop run meanwhile). */
function kubectlAsync(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const [command, ...rest] = [...cp.placement.prefix, path.join(cp.bin, 'kubectl'), '--kubeconfig', cp.adminKubeconfig, ...args];
    const child = spawn(command!, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`kubectl ${args.join(' ')}: ${out}`))));
  });
}

/** A pod on the cluster network (the pause image), created through the API; its name. */
function createPod(tolerate = false): string {
  const name = `app-${podCounter++}`;
  cp.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', labels: { app: 'meshed' } },
      spec: {
        terminationGracePeriodSeconds: 0,
        automountServiceAccountToken: false,
        ...(tolerate ? { tolerations: [{ operator: 'Exists' }] } : {}),
        containers: [{ name: 'app', image: 'docker.io/library/cni-chainer-pause:1', imagePullPolicy: 'Never' }],
      },
    }),
  });
  return name;
}

/** The names of `pods` whose sandbox's ADD the chained plugin did not record, or whose GET failed. */
function notMeshed(pods: string[]): string[] {
  const calls = invocations(ns.inside(PLUGIN_LOG)).filter((i) => i.cmd === 'ADD');
  return pods.filter((p) => !calls.some((c) => c.pod === `default/${p}` && c.api === 200));
}

async function waitRunning(pods: string[]): Promise<void> {
  if (pods.length === 0) return;
  await kubectlAsync(['wait', '-n', 'default', '--for=condition=Ready', '--timeout=120s', ...pods.map((p) => `pod/${p}`)]);
}

function agentPods(): Array<{ name: string; uid: string; ready: boolean; restarts: number }> {
  type Pod = { metadata: { name: string; uid: string; deletionTimestamp?: string }; status: { conditions?: Array<{ type: string; status: string }>; containerStatuses?: Array<{ restartCount: number }> } };
  return json<{ items: Pod[] }>(['get', 'pods', '-n', NS, '-l', AGENT]).items.map((p) => ({
    name: p.metadata.name,
    uid: p.metadata.uid,
    ready: p.metadata.deletionTimestamp === undefined && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    restarts: p.status.containerStatuses?.[0]?.restartCount ?? 0,
  }));
}

const chained = () => /"type"\s*:\s*"linkerd-cni"/.test(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8'));

beforeAll(async () => {
  if (reason !== undefined) return;
  dir = mkdtempSync(path.join(tmpdir(), 'cc-node-'));
  const bin = clusterBinDir();
  ns = await NodeNamespace.create(path.join(dir, 'ns'));
  // The API server on the kubernetes Service's address and port, as the pods are told.
  cp = new ControlPlane(path.join(dir, 'control-plane'), bin, { prefix: ns.prefix, apiPort: 443, bindAddress: '0.0.0.0', nodes: [NODE] });
  await cp.start();
  // The primary CNI, installed as kind installs it: its plugins in /opt/cni/bin, its conflist in net.d.
  for (const plugin of readdirSync('/usr/lib/cni')) writeFileSync(path.join(ns.binDir, plugin), readFileSync(path.join('/usr/lib/cni', plugin)), { mode: 0o755 });
  primaryBins = readdirSync(ns.binDir).sort();
  writeFileSync(path.join(ns.netDir, PRIMARY_NAME), PRIMARY);
  node = new KubeletNode(NODE, ns, bin, path.join(dir, 'node'));
  await node.start(cp, [{ key: TAINT, effect: 'NoSchedule' }]);
  // IMAGE_TEST_STORE (a developer's shortcut, never set in CI): buildah's storage kept there.
  const buildah = new Buildah(process.env.IMAGE_TEST_STORE ?? path.join(dir, 'buildah'));
  if (!buildah.has(BUILD_BASE) || !buildah.has(RUNTIME_BASE)) buildBases(buildah);
  buildPluginStandIn(buildah, PLUGIN_LOG, { getOwnPod: true });
  buildAgentImage(buildah, 'localhost/cni-chainer:cluster-test');
  const archive = path.join(dir, 'agent.oci.tar');
  buildah.ociArchive('localhost/cni-chainer:cluster-test', archive, IMAGE);
  node.importImage(archive);
  await waitFor(
    () => json<{ status: { conditions: Array<{ type: string; status: string }> } }>(['get', 'node', NODE]).status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    'the node Ready',
    120_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${node.logTail('kubelet')}`);
  });
}, 1_800_000);

afterAll(async () => {
  await node?.stop();
  await cp?.stop();
  await ns?.destroy();
  if (dir !== undefined && process.env.CLUSTER_TEST_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe.skipIf(reason !== undefined)('deploy/base on a real node (kubelet, containerd 2)', () => {
  it('gates the node: a pod created before the agent waits for the taint, and starts meshed once the agent chained', async () => {
    expect(taints()).toContain(TAINT);
    const early = createPod();
    // The scheduler's words: "0/1 nodes are available: 1 node(s) had untolerated taint(s)".
    await waitFor(
      () => json<{ status: { conditions?: Array<{ type: string; reason?: string; message?: string }> } }>(['get', 'pod', '-n', 'default', early]).status.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable' && c.message?.includes('untolerated taint') === true) === true,
      'the early pod unschedulable for the taint',
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${cp.kubectl(['get', 'pod', '-n', 'default', early, '-o', 'yaml'])}`);
    });
    cp.kubectl(['apply', '-k', path.join(repoRoot, 'deploy', 'base')]);
    // The scheduler places the DaemonSet's pod (it tolerates the taint), admission takes it, and the
    // kubelet runs it with the manifest's probes: Ready means the readiness probe answered 200.
    await waitFor(() => agentPods().some((p) => p.ready), 'the agent pod Ready', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${cp.kubectl(['describe', 'pods', '-n', NS])}\n${node.logTail('kubelet', 20)}`);
    });
    expect(chained()).toBe(true);
    await waitFor(() => !taints().includes(TAINT), 'the taint removed', 30_000);
    await waitRunning([early]);
    expect(notMeshed([early])).toEqual([]);
    expect(cp.kubectl(['events', '--for', `node/${NODE}`])).toMatch(/Chained/);
  }, 300_000);

  it('meshes the pods created through the API, and the kubeconfig it wrote reaches the API server', async () => {
    const pods = Array.from({ length: 5 }, () => createPod());
    await waitRunning(pods);
    expect(notMeshed(pods)).toEqual([]);
    const kubeconfig = readFileSync(path.join(ns.netDir, 'ZZZ-linkerd-cni-kubeconfig'), 'utf8');
    expect(kubeconfig).toContain('"https://10.96.0.1:443"');
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
  }, 180_000);

  it('a rolling update, a rollback, a liveness restart, a drain and an eviction: never unchained (sampled every 20 ms), every pod meshed', async () => {
    const sampler = await sampleChained(path.join(ns.netDir, PRIMARY_NAME), 'linkerd-cni');
    const created: string[] = [];
    /** Pods created one after another while `during` runs. */
    const withPods = async (during: Promise<unknown>) => {
      let done = false;
      void during.finally(() => (done = true)).catch(() => {});
      while (!done) {
        created.push(createPod(true));
        await new Promise((r) => setTimeout(r, 300));
      }
      await during;
    };
    const rollout = () => kubectlAsync(['rollout', 'status', '-n', NS, 'daemonset/linkerd-cni', '--timeout=180s']);
    try {
      // A rolling update by the DaemonSet controller (maxSurge 1): the new pod beside the old one.
      const before = agentPods()[0]!.name;
      cp.kubectl(['set', 'env', '-n', NS, 'daemonset/linkerd-cni', 'LOG_LEVEL=debug']);
      await withPods(rollout());
      await waitFor(() => agentPods().length === 1 && agentPods()[0]!.name !== before && agentPods()[0]!.ready, 'one new agent pod', 60_000);
      // kubectl rollout undo.
      const updated = agentPods()[0]!.name;
      cp.kubectl(['rollout', 'undo', '-n', NS, 'daemonset/linkerd-cni']);
      await withPods(rollout());
      await waitFor(() => agentPods().length === 1 && agentPods()[0]!.name !== updated && agentPods()[0]!.ready, 'the previous version back', 60_000);
      // A liveness restart: the agent frozen until the kubelet gives up on its /healthz, then thawed
      // so that it meets the kubelet's SIGTERM.
      const pod = agentPods()[0]!;
      const pid = agentPid(pod.uid);
      process.kill(pid, 'SIGSTOP');
      try {
        await withPods(waitFor(() => cp.kubectl(['events', '-n', NS, '--for', `pod/${pod.name}`]).includes('failed liveness probe, will be restarted'), 'the liveness restart', 90_000));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await withPods(waitFor(() => agentPods()[0]?.restarts === 1 && agentPods()[0]!.ready, 'the container restarted and Ready', 90_000));
      // A drain: the node cordoned and its pods evicted (the DaemonSet's stays, as kubectl drain
      // leaves it), then the agent's own pod evicted through the eviction API.
      await withPods(kubectlAsync(['drain', NODE, '--ignore-daemonsets', '--force', '--timeout=120s']));
      cp.kubectl(['uncordon', NODE]);
      const evicted = agentPods()[0]!;
      cp.kubectl(['create', '--raw', `/api/v1/namespaces/${NS}/pods/${evicted.name}/eviction`, '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: evicted.name, namespace: NS } }),
      });
      await withPods(waitFor(() => agentPods().some((p) => p.name !== evicted.name && p.ready) && !agentPods().some((p) => p.name === evicted.name), 'a new agent pod after the eviction', 120_000));
    } finally {
      const samples = await sampler.stop();
      console.log(`rollout, rollback, liveness restart, drain, eviction: ${samples.count} samples, ${samples.unchained.length} unchained, longest gap ${samples.maxGapMs} ms; ${created.length} pods created meanwhile`);
      expect(samples.unchained).toEqual([]);
      expect(samples.maxGapMs).toBeLessThan(1_000);
    }
    // The pods the drain evicted ran before it; every pod created meanwhile got its ADD.
    const current = json<{ items: Array<{ metadata: { name: string } }> }>(['get', 'pods', '-n', 'default']).items.map((p) => p.metadata.name);
    await waitRunning(created.filter((p) => current.includes(p)));
    await waitFor(() => notMeshed(created).length === 0, 'every pod created meanwhile meshed', 60_000).catch(() => {
      throw new Error(`not meshed: ${notMeshed(created).join(', ')}`);
    });
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
  }, 900_000);

  it('kubectl delete -k deploy/base: the node is left byte-identical', async () => {
    cp.kubectl(['delete', '-k', path.join(repoRoot, 'deploy', 'base'), '--wait=false']);
    await waitFor(() => agentPods().length === 0, 'the agent pod gone', 120_000);
    expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
    expect(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8')).toBe(PRIMARY);
    expect(readdirSync(ns.binDir).sort()).toEqual(primaryBins);
    expect(existsSync(path.join(ns.netDir, 'ZZZ-linkerd-cni-kubeconfig'))).toBe(false);
  }, 180_000);
});

/** The pid of the agent's process in the pod `uid` (its cgroup names the pod). */
function agentPid(uid: string): number {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      if (cmdline.includes('cni-chainer.mjs') && cgroup.includes(uid)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no agent process in pod ${uid}`);
}
