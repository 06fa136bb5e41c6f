// The node's own mount, network and PID namespaces, which the whole single-node cluster runs in: etcd,
// the control plane, containerd, the kubelet and every pod. A reaper holds them as the namespace's
// PID 1; each component is started with `nsenter` into them.
//
// Why a namespace and not the machine itself:
// - Network. The kubelet gives every pod KUBERNETES_SERVICE_HOST=10.96.0.1, the kubernetes
//   Service's IP, and there is no kube-proxy to carry it to the API server. Here 10.96.0.1 is an
//   address of the namespace's own loopback, and the API server listens on it, port 443: the agent
//   and the plugin reach the API server exactly as they would on a node. The bridge CNI's cni0 and
//   veths, and the node's address, stay off the machine's network.
// - Files. The node's /etc/cni and /opt/cni are scratch directories mounted where the manifests'
//   hostPaths point, so deploy/ is applied unchanged; /run, /var/lib and /var/log are tmpfs. The
//   machine's own /etc is never written: inside the namespace it is an overlay whose upper layer is
//   scratch, so the mount point /etc/cni exists there only, and two suites (or anything else on the
//   machine that uses /etc/cni) never meet.
// - Processes. A test worker that dies outright (vitest's timeout, a SIGKILL) must not leave a cluster
//   running: the holder runs under PR_SET_PDEATHSIG (setpriv), unshare's --kill-child passes its
//   death on to the namespace's PID 1, and the kernel ends every process of a PID namespace whose
//   PID 1 dies (pid_namespaces(7)): etcd, the kubelet, containerd's shims and every container. Their
//   cgroups, empty then, are removed by the next suite (removeStaleCgroups).
// - The kernel tunables the kubelet insists on (vm.overcommit_memory=1, kernel.panic=10,
//   kernel.panic_on_oops=1, ...: pkg/kubelet/cm setupKernelTunables) are global, not per namespace.
//   Files with the values it expects are bind-mounted over them, so that it never writes the
//   machine's.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
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

  private constructor(
    readonly dir: string,
    holder: ChildProcess,
    private readonly initPid: number,
    cgroupRoot: string,
  ) {
    this.holder = holder;
    this.cgroupRoot = cgroupRoot;
    this.netDir = path.join(dir, 'etc-cni', 'net.d');
    this.binDir = path.join(dir, 'opt-cni', 'bin');
  }

  /** `nsenter` into the namespaces, to put before a command. */
  get prefix(): string[] {
    return ['nsenter', '-t', String(this.init), '-m', '-n', '-p', '--'];
  }

  /** A path inside the namespace (its tmpfs /var/log, say), as the machine can read it. */
  inside(file: string): string {
    return path.join(`/proc/${this.init}/root`, file);
  }

  /** The namespace's PID 1 as the machine numbers it: unshare's one child. */
  private get init(): number {
    return this.initPid;
  }

  static async create(dir: string): Promise<NodeNamespace> {
    removeStaleCgroups();
    const etcCni = path.join(dir, 'etc-cni');
    const optCni = path.join(dir, 'opt-cni');
    const sysctls = path.join(dir, 'sysctl');
    const etcUpper = path.join(dir, 'etc-overlay', 'upper');
    const etcWork = path.join(dir, 'etc-overlay', 'work');
    for (const d of [path.join(etcCni, 'net.d'), path.join(optCni, 'bin'), sysctls, etcUpper, etcWork]) mkdirSync(d, { recursive: true });
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
      // /etc as an overlay with a scratch upper layer: the mount point below exists in here only.
      `mount -t overlay overlay -o 'lowerdir=/etc,upperdir=${etcUpper},workdir=${etcWork}' /etc`,
      'mkdir -p /etc/cni',
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
      // PID 1 of the namespace: the containers' shims are reparented to it, and it must reap them.
      `exec python3 -c '${REAPER}'`,
    ].join('\n');
    const holder = spawn('setpriv', ['--pdeathsig', 'KILL', '--', 'unshare', '--mount', '--net', '--pid', '--fork', '--kill-child=SIGKILL', '--mount-proc', '--propagation', 'private', '--', 'sh', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    holder.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    holder.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 10_000;
    while (!output.includes('up\n')) {
      if (holder.exitCode !== null || Date.now() > deadline) throw new Error(`the node's namespaces: ${output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim().split(/\s+/);
    if (children.length !== 1 || children[0] === '') throw new Error(`the node's namespaces: unshare has children ${JSON.stringify(children)}`);
    return new NodeNamespace(dir, holder, Number(children[0]), cgroupRoot);
  }

  /** Ends the namespaces (their mounts go with them) and removes the cgroup root. */
  async destroy(): Promise<void> {
    if (this.holder.exitCode === null) {
      const exited = new Promise((r) => this.holder.once('exit', r));
      this.holder.kill('SIGKILL');
      await exited;
    }
    // The v2 hierarchy of a hybrid mount too: runc creates the containers' cgroups there as well.
    for (const hierarchy of cgroupHierarchies()) removeTree(path.join(hierarchy, this.cgroupRoot));
  }
}

// Reaps every child it is given (the shims, once their containers are gone), until killed.
const REAPER = ['import os, time', 'while True:', '  try: os.wait()', '  except ChildProcessError: time.sleep(1)'].join('\n');

/** Every hierarchy a node's cgroups live in: the v1 ones, and the v2 one of a hybrid mount. */
function cgroupHierarchies(): string[] {
  return [...v1Hierarchies(), '/sys/fs/cgroup/unified'];
}

/**
 * The cgroup roots of earlier suites whose worker died outright: their processes died with their PID
 * namespace, their cgroups stayed (empty). A root named after a live process is another suite's.
 */
function removeStaleCgroups(): void {
  for (const hierarchy of cgroupHierarchies()) {
    if (!existsSync(hierarchy)) continue;
    for (const entry of readdirSync(hierarchy)) {
      const owner = /^cni-chainer-node-(\d+)$/.exec(entry)?.[1];
      if (owner !== undefined && !existsSync(`/proc/${owner}`)) removeTree(path.join(hierarchy, entry));
    }
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
