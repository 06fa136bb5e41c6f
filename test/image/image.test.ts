// Run as deployed (`npm run test:image`): the repo's Dockerfile, unchanged, built with buildah on
// stand-in base images made here (stand-ins.ts), and the DaemonSet's pod from `kustomize build
// deploy/...` run by a private containerd through CRI as kubelet would (pod-spec.ts, kubelet.ts):
// host network, hostPath mounts, capabilities, seccomp RuntimeDefault, the memory limit, probes, the
// preStop hook and the grace period. Pods created meanwhile are counted meshed when the chained
// plugin (the stand-in's, copied out of the image by the agent) ran for their sandbox's ADD.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../helpers/fixtures.js';
import { build, type K8sObject } from '../helpers/kustomize.js';
import { PrivateContainerd, unavailable } from '../runtime/containerd.js';
import { invocations } from '../runtime/test-plugin.js';
import { Buildah, buildUnavailable } from './buildah.js';
import { RunningPod, type Memory } from './kubelet.js';
import { translatePod, type Node } from './pod-spec.js';
import { BUILD_BASE, buildAgentImage, buildBases, buildPluginStandIn, RUNTIME_BASE } from './stand-ins.js';

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

  afterEach(() => RunningPod.stopAll());

  afterAll(async () => {
    await runtime?.stop();
    if (work !== undefined && process.env.IMAGE_TEST_KEEP === undefined) rmSync(work, { recursive: true, force: true });
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

  /** A primary that rewrites its conflist (temp + rename, unchained) every `everyMs`, while `during` runs. */
  async function withChurn<T>(everyMs: number, during: () => Promise<T>): Promise<T> {
    const file = path.join(netDir, '10-containerd-net.conflist');
    const timer = setInterval(() => {
      writeFileSync(`${file}.primary-tmp`, PRIMARY);
      renameSync(`${file}.primary-tmp`, file);
    }, everyMs);
    try {
      return await during();
    } finally {
      clearInterval(timer);
    }
  }

  /** Pods created back to back for `ms`; their ids. */
  async function podsFor(ms: number): Promise<string[]> {
    const ids: string[] = [];
    const end = Date.now() + ms;
    while (Date.now() < end) ids.push(...(await createPods(1)));
    return ids;
  }

  it.each([
    ['base', 500],
    ['overlays/owned', 100],
  ])('%s: a primary rewriting its conflist every %i ms for 10 s: pods meshed through the container', async (layout, everyMs) => {
    clearNode();
    writeFileSync(path.join(netDir, '10-containerd-net.conflist'), PRIMARY);
    const agent = await RunningPod.start(runtime, pod(layout));
    await agent.waitReady();
    let peak: Memory | undefined;
    const sampler = setInterval(() => {
      const m = agent.memory();
      if (peak === undefined || m.workingSet > peak.workingSet) peak = m;
    }, 200);
    const ids = await withChurn(everyMs, () => podsFor(10_000));
    clearInterval(sampler);
    const meshed = meshedCount(ids);
    console.log(`${layout}, churn every ${everyMs} ms: ${meshed}/${ids.length} pods meshed; memory under churn, peak ${describeMemory(peak!)}`);
    // In place a pod may start in the window between the primary's rename and ours (README, "Two
    // modes"); owned mode has no such window.
    if (layout === 'base') expect(meshed / ids.length).toBeGreaterThanOrEqual(0.95);
    else expect(meshed).toBe(ids.length);
    expect((await agent.stop()).exitCode).toBe(0);
    expect(readFileSync(path.join(netDir, '10-containerd-net.conflist'), 'utf8')).toBe(PRIMARY);
    expect(readdirSync(netDir)).toEqual(['10-containerd-net.conflist']);
  }, 120_000);

  it('memory as the cluster sees it: idle, through a 1,000-config storm, within the limit', async () => {
    // The storm runs in a directory of its own, mounted where the pod expects net.d: Debian's
    // containerd 1.6 reloads every config at each event in its conf dir, falls behind a storm of
    // 1,000 new configs, and exits on the overflow of its inotify queue ("cni network conf monitor
    // error: fsnotify queue overflow", seen here), which would end every later test.
    const stormDir = path.join(node.hostRoot, 'etc', 'cni', 'storm.d');
    mkdirSync(stormDir, { recursive: true });
    writeFileSync(path.join(stormDir, '10-containerd-net.conflist'), PRIMARY);
    const spec = pod('base');
    const netDirMount = (spec.container as { mounts: Array<{ container_path: string; host_path: string }> }).mounts.find((m) => m.container_path === '/host/etc/cni/net.d')!;
    netDirMount.host_path = stormDir;
    const agent = await RunningPod.start(runtime, spec);
    await agent.waitReady();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const idle = agent.memory();
    let peak = idle;
    const sample = () => {
      const m = agent.memory();
      if (m.workingSet > peak.workingSet) peak = m;
    };
    const names = Array.from({ length: 1000 }, (_, i) => `50-storm-${String(i).padStart(4, '0')}.conflist`);
    names.forEach((name, i) => {
      writeFileSync(path.join(stormDir, `.${name}.w`), fixture('10-flannel.conflist'));
      renameSync(path.join(stormDir, `.${name}.w`), path.join(stormDir, name));
      if (i % 25 === 0) sample();
    });
    const chained = () => names.every((n) => readFileSync(path.join(stormDir, n), 'utf8').includes('linkerd-cni'));
    const deadline = Date.now() + 60_000;
    while (!chained() && Date.now() < deadline) {
      sample();
      await new Promise((r) => setTimeout(r, 20));
    }
    sample();
    expect(chained()).toBe(true);
    console.log(`memory, base pod: idle ${describeMemory(idle)}; 1,000-config storm, peak ${describeMemory(peak)}; request ${MiB(spec.memoryRequestBytes!)}`);
    expect(peak.usage).toBeLessThan(spec.memoryLimitBytes!);
    expect((await agent.stop()).exitCode).toBe(0);
    expect(readdirSync(stormDir).filter((n) => readFileSync(path.join(stormDir, n), 'utf8').includes('linkerd-cni'))).toEqual([]);
  }, 180_000);

  it('mounts tell the truth: a symlink target on an unmounted host path is named with its fix; the host-paths overlay mounts it', async () => {
    clearNode();
    const targets = path.join(node.hostRoot, 'var', 'lib', 'cni-configs');
    mkdirSync(targets, { recursive: true });
    writeFileSync(path.join(targets, 'primary.conflist'), PRIMARY);
    // Relative, so that containerd, which runs on this machine and not in the node's root, follows it too.
    symlinkSync('../../../var/lib/cni-configs/primary.conflist', path.join(netDir, '10-linked.conflist'));
    const base = await RunningPod.start(runtime, pod('base'));
    const readiness = pod('base').readiness!;
    let reason: string | undefined;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const r = base.probe(readiness);
      if (r?.status === 503 && r.body.includes('does not mount')) {
        reason = r.body;
        break;
      }
    }
    expect(reason).toContain('the target /var/lib/cni-configs/primary.conflist is on a host path this pod does not mount');
    expect(reason).toContain('add a hostPath volume for /var/lib/cni-configs (deploy/overlays/host-paths)');
    expect(base.logLines().some((l) => typeof l.detail === 'string' && l.detail.includes('a host path this pod does not mount'))).toBe(true);
    expect((await base.stop()).exitCode).toBe(0);
    const withPaths = await RunningPod.start(runtime, pod('overlays/host-paths'));
    await withPaths.waitReady();
    expect(readFileSync(path.join(targets, 'primary.conflist'), 'utf8')).toContain('linkerd-cni');
    expect(meshedCount(await createPods(5))).toBe(5);
    expect((await withPaths.stop()).exitCode).toBe(0);
    expect(readFileSync(path.join(targets, 'primary.conflist'), 'utf8')).toBe(PRIMARY);
    rmSync(path.join(netDir, '10-linked.conflist'));
  }, 120_000);

  it('rolling update with maxSurge, then a rollback: the node stays chained, and the last one out cleans up', async () => {
    clearNode();
    writeFileSync(path.join(netDir, '10-containerd-net.conflist'), PRIMARY);
    const chained = () => readFileSync(path.join(netDir, '10-containerd-net.conflist'), 'utf8').includes('linkerd-cni');
    const old = await RunningPod.start(runtime, pod('base'));
    await old.waitReady();
    // The surge pod: a newer instance beside the old one; it takes the node and the health port.
    const next = await RunningPod.start(runtime, pod('base'));
    await next.waitReady();
    const during: string[] = [];
    const stopOld = old.stop();
    during.push(...(await createPods(5)));
    expect((await stopOld).exitCode).toBe(0);
    expect(chained()).toBe(true);
    expect(existsSync(path.join(binDir, 'linkerd-cni'))).toBe(true);
    during.push(...(await createPods(5)));
    expect(meshedCount(during)).toBe(during.length);
    // Rollback: the previous version comes back beside it, and the newer one goes.
    const back = await RunningPod.start(runtime, pod('base'));
    await back.waitReady();
    expect((await next.stop()).exitCode).toBe(0);
    expect(chained()).toBe(true);
    expect(meshedCount(await createPods(5))).toBe(5);
    expect((await back.stop()).exitCode).toBe(0);
    expect(readFileSync(path.join(netDir, '10-containerd-net.conflist'), 'utf8')).toBe(PRIMARY);
    expect(existsSync(path.join(binDir, 'linkerd-cni'))).toBe(false);
  }, 180_000);
});

function describeMemory(m: Memory): string {
  return `working set ${MiB(m.workingSet)} (anon ${MiB(m.anon)}, file ${MiB(m.file)}), limit ${MiB(m.limit)}`;
}

