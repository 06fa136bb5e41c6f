// A private containerd for the real-runtime suite: its own root, state, socket and config, its CRI
// plugin reading CNI configs from the scratch host tree, in a private mount and network namespace
// (scratch /run and /var/lib; the pods' bridge and veths never touch the machine's network). Nothing
// of the machine's /etc/cni or /opt/cni is used.
//
// What this machine needs, learned the hard way: restrict_oom_score_adj (root here lacks
// CAP_SYS_RESOURCE, and runc fails writing oom_score_adj), the native snapshotter, and a locally built
// sandbox image (no registry).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CriClient } from './cri-client.js';
import { buildPauseImage } from './oci-image.js';

export const PAUSE_IMAGE = 'docker.io/library/cni-chainer-pause:1';

/** Why the suite cannot run here, or undefined when it can. */
export function unavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const bin of ['containerd', 'ctr', 'runc', 'containerd-shim-runc-v2', 'unshare', 'gcc']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  if (!existsSync('/usr/lib/cni/bridge')) return 'containernetworking-plugins is not installed (/usr/lib/cni)';
  if (spawnSync('unshare', ['--mount', '--net', '--propagation', 'private', 'true']).status !== 0) return 'cannot create mount and network namespaces';
  // The node's loopback, up as on any node: host-network pods (the agent's probes) listen there.
  if (spawnSync('sh', ['-c', 'command -v ip']).status !== 0) return 'iproute2 is not installed (ip)';
  return undefined;
}

export class PrivateContainerd {
  readonly socket: string;
  readonly cgroupParent = `/cni-chainer-test-${process.pid}`;
  readonly cri: CriClient;
  private readonly child: ChildProcess;
  readonly log: string;
  private exited = false;

  /** containerd's pid: its network namespace is the pods' host network. */
  get pid(): number {
    return this.child.pid!;
  }

  /** Imports an OCI archive into the CRI's image store. */
  importImage(archive: string): void {
    execFileSync('ctr', ['--address', this.socket, '-n', 'k8s.io', 'images', 'import', '--snapshotter', 'native', archive], { stdio: 'pipe' });
  }

  private constructor(
    readonly work: string,
    child: ChildProcess,
  ) {
    this.socket = path.join(work, 'containerd.sock');
    this.log = path.join(work, 'containerd.log');
    this.child = child;
    child.on('exit', () => (this.exited = true));
    this.cri = new CriClient(this.socket);
  }

  static async start(work: string, confDir: string, binDir: string): Promise<PrivateContainerd> {
    mkdirSync(work, { recursive: true });
    const config = path.join(work, 'config.toml');
    writeFileSync(
      config,
      `version = 2
root = "${work}/root"
state = "${work}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.overlayfs"]
[grpc]
  address = "${work}/containerd.sock"
[ttrpc]
  address = "${work}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${work}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${binDir}"
    conf_dir = "${confDir}"
    max_conf_num = 1
`,
    );
    const log = path.join(work, 'containerd.log');
    const out = (await import('node:fs')).openSync(log, 'a');
    // The mount namespace gets scratch /run and /var/lib (netns bind mounts, host-local's leases); the
    // network namespace keeps the bridge and veths away from the machine's network.
    const child = spawn(
      'unshare',
      ['--mount', '--net', '--propagation', 'private', '--', 'sh', '-c', 'mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib && ip link set lo up && exec containerd --config "$0"', config],
      { stdio: ['ignore', out, out], detached: false },
    );
    const runtime = new PrivateContainerd(work, child);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (runtime.exited) throw new Error(`containerd exited: ${readFileSync(log, 'utf8').slice(-2000)}`);
      try {
        await runtime.cri.version();
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`containerd did not answer: ${readFileSync(log, 'utf8').slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    runtime.importImage(buildPauseImage(path.join(work, 'image'), PAUSE_IMAGE));
    return runtime;
  }

  /** Kills containerd, its shims and every sandbox process, and removes their cgroups. */
  async stop(): Promise<void> {
    this.cri.close();
    this.child.kill('SIGKILL');
    // Shims re-parent to init; they and the sandboxes are found by their socket and their cgroup.
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
        if (cmdline.includes(this.socket) || cgroup.includes(this.cgroupParent)) process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 200));
    removeCgroups(this.cgroupParent);
  }
}

/** rmdir of a cgroup subtree in every hierarchy, deepest first. */
function removeCgroups(parent: string): void {
  const roots = ['/sys/fs/cgroup', ...readdirSync('/sys/fs/cgroup').map((c) => path.join('/sys/fs/cgroup', c))];
  for (const root of roots) {
    const top = path.join(root, parent);
    if (!existsSync(top)) continue;
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(path.join(dir, entry.name));
      try {
        rmdirSync(dir);
      } catch {
        // still busy: its processes are being reaped
      }
    };
    walk(top);
  }
}
