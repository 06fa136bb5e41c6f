// A Kubernetes control plane for the cluster suite and the fleet bench, built from the pinned tools module
// (scripts/build-cluster.sh): etcd, kube-apiserver with the RBAC and Node authorizers and the
// NodeRestriction, PodSecurity, Priority and ResourceQuota admission plugins (ResourceQuota limiting
// the critical priority classes as GKE's API servers do), kube-controller-manager and kube-scheduler.
// Loopback only, ports picked free, everything in one scratch directory that goes with it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../free-port.js';
import { makePki, type Pki } from './pki.js';
import { stopComponents } from './processes.js';
import { repoRoot } from '../repo-root.js';

/** The cluster binaries, built (or found in the cache) by the one script that builds them. */
export function clusterBinDir(): string {
  const out = execFileSync('bash', [path.join(repoRoot, 'scripts', 'build-cluster.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 3_600_000 });
  return out.trim().split('\n').at(-1)!;
}

export const ADMIN_TOKEN = 'cni-chainer-test-admin';
const CONTROLLER_TOKEN = 'cni-chainer-test-controllers';

/** Where the control plane runs: on the machine's loopback, or inside a node's namespaces. */
export interface Placement {
  /** Prepended to every command (nsenter into the node's namespaces), or empty. */
  prefix: string[];
  /** The API server's secure port; picked free when absent. */
  apiPort?: number;
  /** 127.0.0.1, or 0.0.0.0 inside a private network namespace (the Service IP is an address there). */
  bindAddress: string;
  /** Kubelets that will join: each gets a static token as system:node:<name>. */
  nodes: string[];
  /** kube-controller-manager's controllers; DEFAULT_CONTROLLERS when absent. */
  controllers?: string[];
  /** Runs kube-scheduler (default true). */
  scheduler?: boolean;
  /** More kube-apiserver flags (the fleet's audit log). */
  apiServerArgs?: string[];
}

/** What the suites need: DaemonSets, accounts and their tokens, namespaces, the GC, node lifecycle. */
export const DEFAULT_CONTROLLERS = ['daemonset', 'serviceaccount', 'namespace', 'garbagecollector', 'resourcequota', 'nodelifecycle', 'serviceaccount-token', 'root-ca-cert-publisher'];

const ON_LOOPBACK: Placement = { prefix: [], bindAddress: '127.0.0.1', nodes: [] };

/** The static token a kubelet of `node` uses (Node authorizer: system:node:<name> in system:nodes). */
export function nodeToken(node: string): string {
  return `cni-chainer-test-node-${node}`;
}

/** The last `lines` of `<logs>/<name>.log` (the node's components log there too), or '' without one. */
export function componentLogTail(logs: string, name: string, lines = 30): string {
  try {
    return readFileSync(path.join(logs, `${name}.log`), 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export class ControlPlane {
  /** Each component by name: its arguments (to start it again) and its process. */
  private readonly components = new Map<string, { args: string[]; child: ChildProcess }>();
  readonly pki: Pki;
  apiPort = 0;
  private logs: string;

  constructor(
    readonly dir: string,
    readonly bin: string,
    readonly placement: Placement = ON_LOOPBACK,
  ) {
    mkdirSync(dir, { recursive: true });
    this.logs = path.join(dir, 'logs');
    mkdirSync(this.logs);
    this.pki = makePki(dir);
  }

  get server(): string {
    return `https://127.0.0.1:${this.apiPort}`;
  }

  /** A kubeconfig for `token`, written into the scratch directory. */
  kubeconfig(name: string, token: string): string {
    const file = path.join(this.dir, `${name}.kubeconfig`);
    const ca = readFileSync(this.pki.caCert).toString('base64');
    writeFileSync(
      file,
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ${this.server}\n    certificate-authority-data: ${ca}\nusers:\n- name: u\n  user:\n    token: ${token}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n`,
    );
    return file;
  }

  get adminKubeconfig(): string {
    return path.join(this.dir, 'admin.kubeconfig');
  }

  /** kubectl as the cluster admin (or as `token`); its output. */
  kubectl(args: string[], options: { token?: string; input?: string } = {}): string {
    const auth = options.token === undefined ? ['--kubeconfig', this.adminKubeconfig] : ['--kubeconfig', this.adminKubeconfig, '--token', options.token];
    const [command, ...rest] = [...this.placement.prefix, path.join(this.bin, 'kubectl'), ...auth, ...args];
    try {
      // The API server's /metrics is several MiB: past execFileSync's default 1 MiB buffer.
      return execFileSync(command!, rest, { encoding: 'utf8', input: options.input, stdio: ['pipe', 'pipe', 'pipe'], timeout: 60_000, maxBuffer: 64 << 20 });
    } catch (err) {
      // kubectl's own words, not just "Command failed".
      const e = err as Error & { stderr?: string; stdout?: string };
      throw new Error(`kubectl ${args.join(' ')}: ${e.stderr ?? ''}${e.stdout ?? ''}`.trim());
    }
  }

  async start(): Promise<void> {
    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), this.placement.apiPort ?? (await freePort())];
    this.apiPort = apiPort;
    this.run('etcd', [
      '--data-dir', path.join(this.dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `default=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
    ]);
    // Static tokens for the admin and the controllers; every pod's token is a real service-account token.
    const kubelets = this.placement.nodes.map((node) => `${nodeToken(node)},system:node:${node},${node},system:nodes\n`).join('');
    writeFileSync(path.join(this.dir, 'tokens.csv'), `${ADMIN_TOKEN},admin,admin,system:masters\n${CONTROLLER_TOKEN},controllers,controllers,system:masters\n${kubelets}`);
    writeFileSync(
      path.join(this.dir, 'admission.yaml'),
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: AdmissionConfiguration',
        'plugins:',
        '- name: ResourceQuota',
        '  configuration:',
        '    apiVersion: apiserver.config.k8s.io/v1',
        '    kind: ResourceQuotaConfiguration',
        '    limitedResources:',
        '    - resource: pods',
        '      matchScopes:',
        '      - scopeName: PriorityClass',
        '        operator: In',
        '        values: ["system-node-critical", "system-cluster-critical"]',
        '',
      ].join('\n'),
    );
    this.run('kube-apiserver', [
      '--etcd-servers', `http://127.0.0.1:${etcdClient}`,
      '--bind-address', this.placement.bindAddress,
      '--advertise-address', '127.0.0.1',
      '--secure-port', String(apiPort),
      '--tls-cert-file', this.pki.serverCert,
      '--tls-private-key-file', this.pki.serverKey,
      '--client-ca-file', this.pki.caCert,
      '--token-auth-file', path.join(this.dir, 'tokens.csv'),
      '--authorization-mode', 'Node,RBAC',
      '--enable-admission-plugins', 'NodeRestriction,PodSecurity,Priority,ResourceQuota',
      '--admission-control-config-file', path.join(this.dir, 'admission.yaml'),
      '--service-account-issuer', 'https://kubernetes.default.svc',
      '--service-account-key-file', this.pki.saPub,
      '--service-account-signing-key-file', this.pki.saKey,
      '--api-audiences', 'https://kubernetes.default.svc',
      // Never contacted: no kube-proxy here, and the agent is given 127.0.0.1.
      '--service-cluster-ip-range', '10.96.0.0/16',
      '--allow-privileged',
      // The kubernetes Service's endpoints would be 127.0.0.1, which it refuses; nothing uses them here.
      '--endpoint-reconciler-type', 'none',
      '--profiling=false',
      ...(this.placement.apiServerArgs ?? []),
    ]);
    this.kubeconfig('admin', ADMIN_TOKEN);
    await this.waitHealthy();
    const controllers = this.kubeconfig('controllers', CONTROLLER_TOKEN);
    this.run('kube-controller-manager', [
      '--kubeconfig', controllers,
      '--authentication-kubeconfig', controllers,
      '--authorization-kubeconfig', controllers,
      '--bind-address', '127.0.0.1',
      '--secure-port', String(await freePort()),
      '--root-ca-file', this.pki.caCert,
      '--service-account-private-key-file', this.pki.saKey,
      '--controllers', (this.placement.controllers ?? DEFAULT_CONTROLLERS).join(','),
      '--leader-elect=false',
      '--profiling=false',
    ]);
    if (this.placement.scheduler === false) return;
    this.run('kube-scheduler', [
      '--kubeconfig', controllers,
      '--authentication-kubeconfig', controllers,
      '--authorization-kubeconfig', controllers,
      '--bind-address', '127.0.0.1',
      '--secure-port', String(await freePort()),
      '--leader-elect=false',
      '--profiling=false',
    ]);
  }

  /**
   * Under PR_SET_PDEATHSIG (setpriv): a test worker that dies outright takes its control plane with it
   * (inside a node's namespaces, the PID namespace's end does that for what nsenter forks).
   */
  private run(name: string, args: string[]): ChildProcess {
    const out = path.join(this.logs, `${name}.log`);
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', 'sh', '-c', `exec "$0" "$@" >>"${out}" 2>&1`, ...this.placement.prefix, path.join(this.bin, name), ...args], { stdio: 'ignore' });
    this.components.set(name, { args, child });
    return child;
  }

  private get children(): ChildProcess[] {
    return [...this.components.values()].map((c) => c.child);
  }

  /** Stops one component (an API server outage, say): SIGTERM, SIGKILL after 5 s; or SIGKILL at once (a crash). */
  async stopComponent(name: string, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.components.get(name)?.child;
    if (child === undefined) throw new Error(`no component ${name}`);
    await stopComponents([child], signal);
  }

  /** Starts a stopped component again, with its arguments; the API server is waited for until healthy. */
  async startComponent(name: string): Promise<void> {
    const component = this.components.get(name);
    if (component === undefined) throw new Error(`no component ${name}`);
    if (component.child.exitCode === null && component.child.signalCode === null) throw new Error(`${name} is running`);
    this.run(name, component.args);
    if (name === 'kube-apiserver') await this.waitHealthy();
  }

  /** The tail of a component's log, for a failure message. */
  logTail(name: string, lines = 30): string {
    return componentLogTail(this.logs, name, lines);
  }

  private async waitHealthy(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        if (this.kubectl(['get', '--raw', '/readyz']).trim() === 'ok') return;
      } catch {
        // not yet
      }
      const exited = this.children.find((c) => c.exitCode !== null);
      if (exited !== undefined) throw new Error(`a control-plane component exited:\n${this.logTail('kube-apiserver', 5)}\n${this.logTail('etcd', 5)}`);
      if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after 120 s:\n${this.logTail('kube-apiserver')}\n${this.logTail('etcd')}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** SIGTERM, then SIGKILL for whatever is still there after 5 s (the API server drains for long). */
  async stop(): Promise<void> {
    await stopChildren(this.children);
  }
}

const stopChildren = (children: ChildProcess[]) => stopComponents(children);
