// The single-node cluster the node suite runs (node.test.ts): etcd, the control plane, containerd 2
// and a kubelet in the node's namespaces, the image built from the Dockerfile and loaded into the
// node, and what the tests ask of it: pods created through the API, whether the stand-in plugin saw
// them (and reached the API server with the agent's kubeconfig), the agent's pods, process and memory.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fixture } from '../helpers/fixtures.js';
import { repoRoot } from '../helpers/addon-path.js';
import { waitFor } from '../helpers/wait.js';
import { Buildah, buildUnavailable } from '../image/buildah.js';
import { BUILD_BASE, buildAgentImage, buildBases, buildInstallerStandIn, buildPluginStandIn, INSTALLER_STANDIN, RUNTIME_BASE } from '../image/stand-ins.js';
import { invocations } from '../runtime/test-plugin.js';
import { ControlPlane, clusterBinDir } from '../../bench/cluster/control-plane.js';
import { KubeletNode } from './kubelet-node.js';
import { NodeNamespace, nodeUnavailable } from './node-namespace.js';

export const NODE = 'node-a';
export const NS = 'linkerd-cni';
export const TAINT = 'cni-chainer.io/agent-not-ready';
export const PRIMARY_NAME = '10-containerd-net.conflist';
export const PRIMARY = fixture(PRIMARY_NAME);
/** The chart's image (its default tag: <version>-cni-plugin-<plugin version>), as the kubelet resolves it. */
export const IMAGE = 'docker.io/library/cni-chainer:0.1.0-cni-plugin-v1.7.0';
/** linkerd's own installer (the stand-in), as the kubelet resolves it. */
export const INSTALLER_IMAGE = 'docker.io/library/linkerd-installer-standin:test';
/** The image as buildah's storage names it. */
export const BUILT = 'localhost/cni-chainer:cluster-test';
/** Inside the node's namespaces (its /var/log is a tmpfs of its own). */
export const PLUGIN_LOG = '/var/log/linkerd-cni-standin.log';
export const AGENT = 'app.kubernetes.io/name=cni-chainer';

/** Why the suite cannot run here, or undefined. */
export const reason = nodeUnavailable() ?? buildUnavailable();

export let dir: string;
export let ns: NodeNamespace;
export let cp: ControlPlane;
export let node: KubeletNode;
export let primaryBins: string[];
export let buildah: Buildah;
export let imageBuild = '';
let podCounter = 0;

export function json<T>(args: string[]): T {
  return JSON.parse(cp.kubectl([...args, '-o', 'json'])) as T;
}

export function taints(): string[] {
  return (json<{ spec: { taints?: Array<{ key: string }> } }>(['get', 'node', NODE]).spec.taints ?? []).map((t) => t.key);
}

/** kubectl without blocking this loop (the sampler and the pod loop run meanwhile). */
export function kubectlAsync(args: string[]): Promise<string> {
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
export function createPod(tolerate = false): string {
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

/**
 * The names of `pods` not meshed: no ADD of the chained plugin recorded for them, or an ADD whose
 * API call failed (its sandbox failed with it, as with linkerd-cni; a retry that then worked does not
 * undo that).
 */
export function notMeshed(pods: string[]): string[] {
  const calls = invocations(ns.inside(PLUGIN_LOG)).filter((i) => i.cmd === 'ADD');
  return pods.filter((p) => {
    const own = calls.filter((c) => c.pod === `default/${p}`);
    return own.length === 0 || own.some((c) => c.api !== 200);
  });
}

/** The API server's answers to the plugin's calls for `pods` (status → count), for the closing figures. */
export function pluginAnswers(pods: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const c of invocations(ns.inside(PLUGIN_LOG))) {
    if (c.cmd !== 'ADD' || c.pod === undefined || !pods.includes(c.pod.replace(/^default\//, ''))) continue;
    counts[String(c.api)] = (counts[String(c.api)] ?? 0) + 1;
  }
  return counts;
}

export async function waitRunning(pods: string[]): Promise<void> {
  if (pods.length === 0) return;
  await kubectlAsync(['wait', '-n', 'default', '--for=condition=Ready', '--timeout=120s', ...pods.map((p) => `pod/${p}`)]);
}

export function agentPods(): Array<{ name: string; uid: string; ready: boolean; restarts: number }> {
  type Pod = { metadata: { name: string; uid: string; deletionTimestamp?: string }; status: { conditions?: Array<{ type: string; status: string }>; containerStatuses?: Array<{ restartCount: number }> } };
  return json<{ items: Pod[] }>(['get', 'pods', '-n', NS, '-l', AGENT]).items.map((p) => ({
    name: p.metadata.name,
    uid: p.metadata.uid,
    ready: p.metadata.deletionTimestamp === undefined && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
    restarts: p.status.containerStatuses?.[0]?.restartCount ?? 0,
  }));
}

export const chained = () => /"type"\s*:\s*"linkerd-cni"/.test(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8'));

/** Builds the binaries and the image, and starts the cluster with the primary CNI installed. */
export async function setUpNode(): Promise<void> {
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
  buildah = new Buildah(process.env.IMAGE_TEST_STORE ?? path.join(dir, 'buildah'));
  const began = Date.now();
  if (!buildah.has(BUILD_BASE) || !buildah.has(RUNTIME_BASE)) buildBases(buildah);
  buildPluginStandIn(buildah, PLUGIN_LOG, { getOwnPod: true });
  buildInstallerStandIn(buildah);
  const built = Date.now();
  buildAgentImage(buildah, BUILT);
  imageBuild = `stand-in bases in ${((built - began) / 1000).toFixed(0)} s, the image in ${((Date.now() - built) / 1000).toFixed(0)} s, size ${buildah.size(BUILT)}`;
  const archive = path.join(dir, 'agent.oci.tar');
  buildah.ociArchive(BUILT, archive, IMAGE);
  node.importImage(archive);
  const installer = path.join(dir, 'installer.oci.tar');
  buildah.ociArchive(INSTALLER_STANDIN, installer, INSTALLER_IMAGE);
  node.importImage(installer);
  await waitFor(
    () => json<{ status: { conditions: Array<{ type: string; status: string }> } }>(['get', 'node', NODE]).status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    'the node Ready',
    120_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${node.logTail('kubelet')}`);
  });
}

/** Stops every part and removes the scratch directory (CLUSTER_TEST_KEEP keeps it). */
export async function tearDownNode(): Promise<void> {
  await node?.stop();
  await cp?.stop();
  await ns?.destroy();
  if (dir !== undefined && process.env.CLUSTER_TEST_KEEP === undefined) rmSync(dir, { recursive: true, force: true });
}

/**
 * Follows the agent's log in pod `name` as the kubelet writes it: the kubelet removes a pod's logs with
 * the pod, so the file is held open from now on (an unlinked file stays readable through its open
 * descriptor) and read to its end when asked. `stop()` gives the agent's JSON lines.
 */
export function followAgentLog(name: string): { stop(): Array<Record<string, unknown>> } {
  const root = ns.inside(path.join(node.dir, 'kubelet', 'pod-logs'));
  const podDir = readdirSync(root).find((d) => d.startsWith(`${NS}_${name}_`));
  if (podDir === undefined) throw new Error(`no logs of pod ${name} under ${root}`);
  const dir = path.join(root, podDir, 'install-cni');
  const fds = readdirSync(dir).sort().map((file) => openSync(path.join(dir, file), 'r'));
  return {
    stop: () =>
      fds.flatMap((fd) => {
        const text = readFileSync(fd, 'utf8');
        closeSync(fd);
        // The CRI log format: time, stream, tag, then the line.
        return text.split('\n').flatMap((line) => {
          try {
            return [JSON.parse(line.split(' ').slice(3).join(' ')) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
      }),
  };
}

/** The pid of the agent's process in the pod `uid` (its cgroup names the pod). */
export function agentPid(uid: string): number {
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

/** Applies a layout (a directory with a kustomization) and waits for its agent pod to be Ready. */
export async function deploy(layout: string): Promise<{ name: string; uid: string }> {
  // A namespace still terminating refuses every object created in it.
  await namespaceGone({ onlyIfTerminating: true });
  cp.kubectl(['apply', '-k', layout]);
  await waitFor(() => agentPods().some((p) => p.ready), `the agent pod of ${layout} Ready`, 120_000);
  return agentPods().find((p) => p.ready)!;
}

/** Deletes it, and waits until its pod and its namespace are gone (a namespace takes a while). */
export async function undeploy(layout: string): Promise<void> {
  cp.kubectl(['delete', '-k', layout, '--wait=false', '--ignore-not-found']);
  await waitFor(() => agentPods().length === 0, 'the agent pod gone', 120_000);
  await namespaceGone();
}

/** Waits until the agent's namespace is gone (or, `onlyIfTerminating`, is not terminating). */
export async function namespaceGone(options: { onlyIfTerminating?: boolean } = {}): Promise<void> {
  const phase = () => cp.kubectl(['get', 'namespace', NS, '--ignore-not-found', '-o', 'jsonpath={.status.phase}']).trim();
  const settled = () => {
    const now = phase();
    return now === '' || (options.onlyIfTerminating === true && now !== 'Terminating');
  };
  await waitFor(settled, `namespace ${NS} gone`, 120_000);
}

/**
 * A layout of the test's own on top of deploy/base: `patch` is a JSON patch of the DaemonSet;
 * `without` names objects of the base left out.
 */
export function testLayout(name: string, patch: unknown[], without: Array<{ apiVersion: string; kind: string; name: string }> = []): string {
  const layout = path.join(dir, 'layouts', name);
  mkdirSync(layout, { recursive: true });
  writeFileSync(
    path.join(layout, 'kustomization.yaml'),
    JSON.stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [path.relative(layout, path.join(repoRoot, 'deploy', 'base'))],
      patches: [
        { target: { kind: 'DaemonSet', name: 'linkerd-cni' }, patch: JSON.stringify(patch) },
        ...without.map((o) => ({ patch: JSON.stringify({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: NS }, $patch: 'delete' }) })),
      ],
    }),
  );
  return layout;
}

export interface Memory {
  usage: number;
  workingSet: number;
  anon: number;
  file: number;
  limit: number;
}

/** The agent container's memory cgroup, read as the kubelet reads a working set (cgroup v1). */
export function memoryOf(uid: string): Memory {
  const line = readFileSync(`/proc/${agentPid(uid)}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l))!;
  const cgroup = path.join('/sys/fs/cgroup/memory', line.split(':')[2]!);
  const stat = Object.fromEntries(
    readFileSync(path.join(cgroup, 'memory.stat'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([k, v]) => [k, Number(v)]),
  ) as Record<string, number>;
  const usage = Number(readFileSync(path.join(cgroup, 'memory.usage_in_bytes'), 'utf8'));
  return { usage, workingSet: Math.max(0, usage - (stat.total_inactive_file ?? 0)), anon: stat.total_rss ?? 0, file: stat.total_cache ?? 0, limit: Number(readFileSync(path.join(cgroup, 'memory.limit_in_bytes'), 'utf8')) };
}

export const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
export const describeMemory = (m: Memory) => `working set ${MiB(m.workingSet)} (anon ${MiB(m.anon)}, file ${MiB(m.file)}), limit ${MiB(m.limit)}`;

/** GET of the agent's health port from the node's network (as the kubelet's probe does). */
export function probeAgent(urlPath: string): { status: number; body: string } {
  const script = `require('http').get('http://127.0.0.1:9736${urlPath}', (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => process.stdout.write(JSON.stringify({ status: r.statusCode, body: b }))); }).on('error', (e) => process.stdout.write(JSON.stringify({ status: 0, body: String(e) })));`;
  const [command, ...rest] = [...ns.prefix, process.execPath, '-e', script];
  return JSON.parse(execFileSync(command!, rest, { encoding: 'utf8', timeout: 10_000 })) as { status: number; body: string };
}
