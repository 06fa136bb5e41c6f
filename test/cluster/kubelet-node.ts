// The node: containerd 2 and a kubelet, both built from the pinned tools modules, in the node's
// namespaces (node-namespace.ts). The kubelet registers its Node with the agent's startup taint, as
// `--register-with-taints` on a real node pool would, and runs its pods on that containerd.
//
// What this machine needs, learned the hard way:
// - failCgroupV1: false. The machines mount cgroup v1 (hybrid); the kubelet refuses v1 without it.
// - restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and runc fails writing a pod's
//   oom_score_adj below containerd's own ("can't get final child's PID from pipe").
// - --node-ip on an interface with a default route: the kubelet finds no node address otherwise.
// - A locally built sandbox image, pinned: there is no registry.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PAUSE_IMAGE } from '../runtime/containerd.js';
import { buildPauseImage } from '../runtime/oci-image.js';
import { waitFor } from '../helpers/wait.js';
import { componentLogTail, nodeToken, type ControlPlane } from '../../bench/cluster/control-plane.js';
import { NODE_IP, type NodeNamespace } from './node-namespace.js';
import { stopComponents } from '../../bench/cluster/processes.js';

export class KubeletNode {
  private readonly children: ChildProcess[] = [];
  readonly socket: string;
  readonly logs: string;

  constructor(
    readonly name: string,
    readonly ns: NodeNamespace,
    readonly bin: string,
    readonly dir: string,
  ) {
    mkdirSync(dir, { recursive: true });
    this.socket = path.join(dir, 'containerd', 'containerd.sock');
    this.logs = path.join(dir, 'logs');
    mkdirSync(this.logs, { recursive: true });
  }

  /** Imports an OCI archive into the node's image store, as the kubelet's image pulls would. */
  importImage(archive: string): void {
    execFileSync(this.ns.prefix[0]!, [...this.ns.prefix.slice(1), 'ctr', '--address', this.socket, '-n', 'k8s.io', 'images', 'import', archive], { stdio: 'pipe' });
  }

  async start(cp: ControlPlane, taints: Array<{ key: string; effect: string }>): Promise<void> {
    const work = path.join(this.dir, 'containerd');
    mkdirSync(work, { recursive: true });
    writeFileSync(
      path.join(work, 'config.toml'),
      `version = 3
root = "${work}/root"
state = "${work}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${this.socket}"
[ttrpc]
  address = "${this.socket}.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "${work}/opt"
[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${PAUSE_IMAGE}"
[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/opt/cni/bin"]
    conf_dir = "/etc/cni/net.d"
    max_conf_num = 1
`,
    );
    // The shim is found next to containerd on PATH; runc is Debian's.
    this.run('containerd', ['env', `PATH=${this.bin}:${process.env.PATH}`, path.join(this.bin, 'containerd'), '--config', path.join(work, 'config.toml')]);
    const answers = () => {
      try {
        execFileSync(this.ns.prefix[0]!, [...this.ns.prefix.slice(1), 'ctr', '--address', this.socket, 'version'], { stdio: 'ignore' });
        return true;
      } catch {
        return false; // not yet
      }
    };
    await waitFor(answers, 'containerd answering', 30_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${this.logTail('containerd')}`);
    });
    this.importImage(buildPauseImage(path.join(this.dir, 'pause'), PAUSE_IMAGE));

    const kubelet = path.join(this.dir, 'kubelet');
    mkdirSync(kubelet, { recursive: true });
    const config = path.join(kubelet, 'config.yaml');
    writeFileSync(
      config,
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        failCgroupV1: false,
        failSwapOn: false,
        cgroupDriver: 'cgroupfs',
        cgroupRoot: this.ns.cgroupRoot,
        containerRuntimeEndpoint: `unix://${this.socket}`,
        address: '127.0.0.1',
        readOnlyPort: 0,
        healthzBindAddress: '127.0.0.1',
        authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: cp.pki.caCert } },
        authorization: { mode: 'AlwaysAllow' },
        registerWithTaints: taints,
        // A test machine's disk and memory are whatever they are: never evict, never collect images.
        evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
        imageGCHighThresholdPercent: 100,
        imageGCLowThresholdPercent: 99,
        podLogsDir: path.join(kubelet, 'pod-logs'),
        // How soon the kubelet notices a change of a pod's projected volumes (the token's rotation).
        syncFrequency: '5s',
      }),
    );
    const kubeconfig = cp.kubeconfig(`kubelet-${this.name}`, nodeToken(this.name));
    this.run('kubelet', [path.join(this.bin, 'kubelet'), '--config', config, '--kubeconfig', kubeconfig, '--root-dir', path.join(kubelet, 'root'), '--hostname-override', this.name, '--node-ip', NODE_IP]);
  }

  private run(name: string, command: string[]): void {
    const out = openSync(path.join(this.logs, `${name}.log`), 'a');
    const [first, ...rest] = [...this.ns.prefix, ...command];
    this.children.push(spawn(first!, rest, { stdio: ['ignore', out, out] }));
  }

  logTail(name: string, lines = 30): string {
    return componentLogTail(this.logs, name, lines);
  }

  /**
   * The kubelet first, so that it restarts nothing; then containerd, its shims and every container
   * (found by the node's cgroup root, which every pod's cgroup is under).
   */
  async stop(): Promise<void> {
    for (const child of [...this.children].reverse()) await stopComponents([child], 'SIGKILL');
    const mine = (pid: string) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(this.socket) || readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(this.ns.cgroupRoot);
      } catch {
        return false;
      }
    };
    for (let round = 0; round < 20; round++) {
      const left = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && mine(p));
      if (left.length === 0) return;
      for (const pid of left) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
