// Run as deployed (`npm run test:image`): the repo's Dockerfile, unchanged, built with buildah on
// stand-in base images made here (stand-ins.ts), and the DaemonSet's pod from `kustomize build
// deploy/...` run by a private containerd through CRI as kubelet would (pod-spec.ts, kubelet.ts):
// host network, hostPath mounts, capabilities, seccomp RuntimeDefault, the memory limit, probes, the
// preStop hook and the grace period. Pods created meanwhile are counted meshed when the chained
// plugin (the stand-in's, copied out of the image by the agent) ran for their sandbox's ADD.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../helpers/fixtures.js';
import { build, type K8sObject } from '../helpers/kustomize.js';
import { PrivateContainerd, unavailable } from '../runtime/containerd.js';
import { invocations } from '../runtime/test-plugin.js';
import { Buildah, buildUnavailable } from './buildah.js';
import { RunningPod, type Memory } from './kubelet.js';
import { translatePod, type Node } from './pod-spec.js';
import { BUILD_BASE, buildAgentImage, buildBases, buildPluginStandIn, PLUGIN_STANDIN, RUNTIME_BASE } from './stand-ins.js';

const IMAGE = 'localhost/cni-chainer:test';
const PRIMARY = fixture('10-containerd-net.conflist');
const reason = buildUnavailable() ?? unavailable();
if (reason !== undefined) {
  console.warn(`image suite skipped: ${reason}`);
  if (process.env.CI === 'true') throw new Error(`the image suite cannot run in CI: ${reason}`);
}

const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

describe.skipIf(reason !== undefined)('the image and the DaemonSet pod, as deployed', () => {
  let work: string;
  let buildah: Buildah;
  let runtime: PrivateContainerd;
  let node: Node;
  let netDir: string;
  let binDir: string;
  let pluginLog: string;
  let podCounter = 0;

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'cni-chainer-image-'));
    // IMAGE_TEST_STORE (a developer's shortcut, never set in CI): keep buildah's storage there and
    // build the stand-in bases only once.
    const store = process.env.IMAGE_TEST_STORE;
    buildah = new Buildah(store ?? path.join(work, 'buildah'));
    pluginLog = path.join(work, 'plugin.log');
    const began = Date.now();
    if (store === undefined || !buildah.has(BUILD_BASE) || !buildah.has(RUNTIME_BASE)) buildBases(buildah);
    buildPluginStandIn(buildah, pluginLog);
    const built = Date.now();
    buildAgentImage(buildah, IMAGE);
    console.log(`image: stand-in bases in ${((built - began) / 1000).toFixed(0)} s, ${IMAGE} built in ${((Date.now() - built) / 1000).toFixed(0)} s, size ${buildah.size(IMAGE)}`);
    const archive = path.join(work, 'agent.oci.tar');
    buildah.ociArchive(IMAGE, archive);
    // The node: its root, net.d and CNI bin dir (the real bridge and host-local plugins), a token.
    const hostRoot = path.join(work, 'node');
    netDir = path.join(hostRoot, 'etc', 'cni', 'net.d');
    binDir = path.join(hostRoot, 'opt', 'cni', 'bin');
    mkdirSync(netDir, { recursive: true });
    mkdirSync(binDir, { recursive: true });
    for (const plugin of readdirSync('/usr/lib/cni')) copyFileSync(path.join('/usr/lib/cni', plugin), path.join(binDir, plugin));
    const serviceAccountDir = path.join(work, 'serviceaccount');
    mkdirSync(serviceAccountDir);
    writeFileSync(path.join(serviceAccountDir, 'token'), 'token-1');
    writeFileSync(path.join(serviceAccountDir, 'ca.crt'), 'CA');
    runtime = await PrivateContainerd.start(path.join(work, 'containerd'), netDir, binDir);
    runtime.importImage(archive);
    node = { hostRoot, serviceAccountDir, apiServer: { host: '10.96.0.1', port: '443' }, cgroupParent: runtime.cgroupParent, logDir: path.join(work, 'logs') };
  }, 900_000);

  afterAll(async () => {
    await runtime?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  function pod(layout: string): ReturnType<typeof translatePod> {
    const objects = build(layout);
    const daemonSet = objects.find((o) => o.kind === 'DaemonSet')!;
    return translatePod(daemonSet, objects.filter((o: K8sObject) => o.kind === 'ConfigMap'), IMAGE, node, `agent-${podCounter++}`);
  }

  function clearNode(): void {
    for (const dir of [netDir]) for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
  }

  function meshedCount(ids: string[]): number {
    const added = new Set(invocations(pluginLog).filter((i) => i.cmd === 'ADD').map((i) => i.id));
    return ids.filter((id) => added.has(id)).length;
  }

  async function createPods(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const id = await runtime.cri.runPodSandbox(`pod-${podCounter++}`, runtime.cgroupParent);
      ids.push(id);
      await runtime.cri.removePodSandbox(id);
    }
    return ids;
  }

  it('builds from the unchanged Dockerfile: Node 24, no compiler, no tests, no copy of the registry Node', () => {
    expect(buildah.runIn(IMAGE, ['node', '--version'])).toMatch(/^v24\./);
    buildah.inspectFiles(IMAGE, (rootfs) => {
      for (const compiler of ['usr/bin/gcc', 'usr/bin/g++', 'usr/bin/cc', 'usr/bin/make']) expect(existsSync(path.join(rootfs, compiler)), compiler).toBe(false);
      expect(readdirSync(path.join(rootfs, 'app')).sort()).toEqual(['build', 'dist', 'node_modules', 'package.json']);
      expect(readdirSync(path.join(rootfs, 'app', 'node_modules')).filter((n) => n.startsWith('node-linux-'))).toEqual([]);
      expect(existsSync(path.join(rootfs, 'app', 'node_modules', '.bin', 'node'))).toBe(false);
      expect(existsSync(path.join(rootfs, 'app', 'test'))).toBe(false);
      expect(statSync(path.join(rootfs, 'opt', 'cni', 'bin', 'linkerd-cni')).mode & 0o111).not.toBe(0);
      expect(existsSync(path.join(rootfs, 'usr', 'lib', 'linkerd', 'linkerd-cni-repair-controller'))).toBe(true);
    });
  });

  it('base: the pod chains a 0600 config under containerd, answers its probes, meshes pods, and a stop leaves the node as it was', async () => {
    clearNode();
    writeFileSync(path.join(netDir, '10-containerd-net.conflist'), PRIMARY, { mode: 0o600 });
    const spec = pod('base');
    const agent = await RunningPod.start(runtime, spec);
    // Pods requested from the start: the first meshed one tells how long a new node runs unmeshed.
    const first: number[] = [];
    let firstMeshedAt: number | undefined;
    while (firstMeshedAt === undefined && Date.now() - agent.startedAt < 30_000) {
      const requestedAt = Date.now();
      const [id] = await createPods(1);
      if (meshedCount([id!]) === 1) firstMeshedAt = requestedAt;
      first.push(requestedAt);
    }
    expect(firstMeshedAt).toBeDefined();
    await agent.waitReady();
    expect(agent.probe(spec.liveness!)?.status).toBe(200);
    const ids = await createPods(20);
    expect(meshedCount(ids)).toBe(20);
    const memory = agent.memory();
    expect(memory.limit).toBe(spec.memoryLimitBytes);
    expect((statSync(path.join(netDir, '10-containerd-net.conflist')).mode & 0o777).toString(8)).toBe('600');
    console.log(`base pod: exec to the first meshed sandbox ${firstMeshedAt! - agent.startedAt} ms; 20/20 meshed; memory idle ${describeMemory(memory)}`);
    const stopped = await agent.stop();
    expect(stopped.exitCode).toBe(0);
    expect(readFileSync(path.join(netDir, '10-containerd-net.conflist'), 'utf8')).toBe(PRIMARY);
    expect(readdirSync(netDir)).toEqual(['10-containerd-net.conflist']);
    expect(existsSync(path.join(binDir, 'linkerd-cni'))).toBe(false);
  }, 120_000);
});

function describeMemory(m: Memory): string {
  return `working set ${MiB(m.workingSet)} (anon ${MiB(m.anon)}, file ${MiB(m.file)}), limit ${MiB(m.limit)}`;
}

void renameSync;
void PLUGIN_STANDIN;
