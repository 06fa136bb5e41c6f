// The node's own mount and network namespaces, which the whole single-node cluster runs in: etcd,
// the control plane, containerd, the kubelet and every pod. A `sleep` holds them; each component is
// started with `nsenter` into them.
//
// Why a namespace and not the machine itself:
// - Network. The kubelet gives every pod KUBERNETES_SERVICE_HOST=10.96.0.1, the kubernetes
//   Service's IP, and there is no kube-proxy to carry it to the API server. Here 10.96.0.1 is an
//   address of the namespace's own loopback, and the API server listens on it, port 443: the agent
//   and the plugin reach the API server exactly as they would on a node. The bridge CNI's cni0 and
//   veths, and the node's address, stay off the machine's network.
// - Files. The node's /etc/cni and /opt/cni are scratch directories mounted where the manifests'
//   hostPaths point, so deploy/ is applied unchanged; /run, /var/lib and /var/log are tmpfs.
// - The kernel tunables the kubelet insists on (vm.overcommit_memory=1, kernel.panic=10,
//   kernel.panic_on_oops=1, ...: pkg/kubelet/cm setupKernelTunables) are global, not per namespace.
//   Files with the values it expects are bind-mounted over them, so that it never writes the
//   machine's.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The kubernetes Service's ClusterIP for --service-cluster-ip-range 10.96.0.0/16. */
export const SERVICE_IP = '10.96.0.1';
/** The node's InternalIP: on a veth of the namespace (no dummy module here), with a default route. */
export const NODE_IP = '172.30.0.2';

const KUBELET_TUNABLES: Record<string, string> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

/** Why the node cannot run here, or undefined when it can. */
export function nodeUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const bin of ['unshare', 'nsenter', 'ip', 'runc', 'ctr', 'gcc']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  if (!existsSync('/usr/lib/cni/bridge')) return 'containernetworking-plugins is not installed (/usr/lib/cni)';
  return undefined;
}

export class NodeNamespace {
  /** The node's /etc/cni/net.d and /opt/cni/bin, as the machine sees them. */
  readonly netDir: string;
  readonly binDir: string;
  /** A cgroup of its own in every v1 hierarchy: the kubelet's --cgroup-root, removed at the end. */
  readonly cgroupRoot: string;
  private readonly holder: ChildProcess;
  /** The machine had no /etc/cni to mount over: made for the mount, removed at the end. */
  private madeEtcCni = false;

  private constructor(
    readonly dir: string,
    holder: ChildProcess,
    cgroupRoot: string,
  ) {
    this.holder = holder;
    this.cgroupRoot = cgroupRoot;
    this.netDir = path.join(dir, 'etc-cni', 'net.d');
    this.binDir = path.join(dir, 'opt-cni', 'bin');
  }

  /** `nsenter` into the namespaces, to put before a command. */
  get prefix(): string[] {
    return ['nsenter', '-t', String(this.holder.pid), '-m', '-n', '--'];
  }

  /** A path inside the namespace (its tmpfs /var/log, say), as the machine can read it. */
  inside(file: string): string {
    return path.join(`/proc/${this.holder.pid}/root`, file);
  }

  static async create(dir: string): Promise<NodeNamespace> {
    const etcCni = path.join(dir, 'etc-cni');
    const optCni = path.join(dir, 'opt-cni');
    const sysctls = path.join(dir, 'sysctl');
    for (const d of [path.join(etcCni, 'net.d'), path.join(optCni, 'bin'), sysctls]) mkdirSync(d, { recursive: true });
    const masks = Object.entries(KUBELET_TUNABLES).map(([key, value]) => {
      const file = path.join(sysctls, key.replaceAll('/', '.'));
      writeFileSync(file, `${value}\n`);
      return `mount --bind '${file}' /proc/sys/${key}`;
    });
    // Every v1 hierarchy: the kubelet checks that its cgroup root exists in each. A v1 cpuset
    // starts with no CPUs and no memory nodes; the parent's are copied in.
    const cgroupRoot = `/cni-chainer-node-${process.pid}`;
    for (const hierarchy of v1Hierarchies()) mkdirSync(path.join(hierarchy, cgroupRoot), { recursive: true });
    if (existsSync('/sys/fs/cgroup/cpuset/cpuset.cpus')) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(path.join('/sys/fs/cgroup/cpuset', cgroupRoot, f), readFileSync(path.join('/sys/fs/cgroup/cpuset', f)));
    }
    const script = [
      'set -e',
      'mount -t tmpfs tmpfs /run',
      'mount -t tmpfs tmpfs /var/lib',
      'mount -t tmpfs tmpfs /var/log',
      `mount --bind '${etcCni}' /etc/cni`,
      // /opt/cni does not exist on the machine: a tmpfs over /opt makes room for it.
      'mount -t tmpfs tmpfs /opt',
      'mkdir /opt/cni',
      `mount --bind '${optCni}' /opt/cni`,
      ...masks,
      'ip link set lo up',
      `ip addr add ${SERVICE_IP}/32 dev lo`,
      'ip link add node0 type veth peer name node1',
      `ip addr add ${NODE_IP}/24 dev node0`,
      'ip link set node0 up',
      'ip link set node1 up',
      'ip route add default via 172.30.0.1 dev node0',
      'echo up',
      'exec sleep infinity',
    ].join('\n');
    const madeEtcCni = !existsSync('/etc/cni');
    if (madeEtcCni) mkdirSync('/etc/cni');
    const holder = spawn('unshare', ['--mount', '--net', '--propagation', 'private', '--', 'sh', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    holder.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    holder.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 10_000;
    while (!output.includes('up\n')) {
      if (holder.exitCode !== null || Date.now() > deadline) throw new Error(`the node's namespaces: ${output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const node = new NodeNamespace(dir, holder, cgroupRoot);
    node.madeEtcCni = madeEtcCni;
    return node;
  }

  /** Ends the namespaces (their mounts go with them) and removes the cgroup root. */
  async destroy(): Promise<void> {
    if (this.holder.exitCode === null) {
      const exited = new Promise((r) => this.holder.once('exit', r));
      this.holder.kill('SIGKILL');
      await exited;
    }
    // The v2 hierarchy of a hybrid mount too: runc creates the containers' cgroups there as well.
    for (const hierarchy of [...v1Hierarchies(), '/sys/fs/cgroup/unified']) removeTree(path.join(hierarchy, this.cgroupRoot));
    // Made here as a mount point, it is this suite's to remove, with whatever others left in it:
    // buildah's runs, building the image meanwhile, create /etc/cni/net.d once /etc/cni exists, and
    // take a CNI lock file there (cni.lock, left in a clean-clone CI run).
    if (this.madeEtcCni) rmSync('/etc/cni', { recursive: true, force: true });
  }
}

function v1Hierarchies(): string[] {
  return readdirSync('/sys/fs/cgroup', { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'unified')
    .map((e) => path.join('/sys/fs/cgroup', e.name));
}

/** rmdir of a cgroup subtree, deepest first (a cgroup directory goes only when empty). */
function removeTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeTree(path.join(dir, entry.name));
  try {
    rmdirSync(dir);
  } catch {
    // still busy: a process in it is being reaped
  }
}
