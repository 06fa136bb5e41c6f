// The fleet's control plane (bench/cluster/control-plane.ts on loopback): etcd and kube-apiserver, the
// controllers the scenarios need (service-account tokens, namespaces, the garbage collector) and no
// DaemonSet controller nor scheduler: there is no kubelet, and each node's "pod" is made here, bound to
// its Node, owned by the DaemonSet deploy/base applies (so a stop finds it, and it targets the node).
// Every call goes through the agent's own API client, with the admin's static token.
import { mkdirSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import path from 'node:path';
import { ApiClient } from '../../src/kube/api-client.js';
import { ADMIN_TOKEN, ControlPlane } from '../cluster/control-plane.js';
import { parseScrape, type Scrape } from './apiserver-metrics.js';
import { AuditLog, auditFlags } from './audit-log.js';

export const NS = 'linkerd-cni';
export const TAINT = 'cni-chainer.io/agent-not-ready';
const CONTROLLERS = ['serviceaccount', 'namespace', 'garbagecollector', 'serviceaccount-token', 'root-ca-cert-publisher'];

interface Meta {
  metadata?: { uid?: string; name?: string };
}

/** Runs `work` over `items`, at most `limit` at once. */
export async function inParallel<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i]!);
    }),
  );
  return out;
}

export class FleetCluster {
  readonly api: ApiClient;
  private daemonSetUid = '';

  private constructor(
    readonly cp: ControlPlane,
    /** The agents' requests, and only theirs. */
    readonly audit: AuditLog,
  ) {
    this.api = new ApiClient({ server: cp.server, token: () => ADMIN_TOKEN, caFile: cp.pki.caCert, timeoutMs: 30_000 });
  }

  static async start(dir: string, bin: string, repo: string): Promise<FleetCluster> {
    mkdirSync(dir, { recursive: true });
    const auditFile = path.join(dir, 'audit.log');
    const apiServerArgs = auditFlags(path.join(dir, 'audit-policy.json'), auditFile);
    const cp = new ControlPlane(dir, bin, { prefix: [], bindAddress: '127.0.0.1', nodes: [], controllers: CONTROLLERS, scheduler: false, apiServerArgs });
    await cp.start();
    const cluster = new FleetCluster(cp, new AuditLog(auditFile));
    // deploy/base as operators apply it: the chart rendered, its RBAC and policies.
    cp.kubectl(['apply', '-k', path.join(repo, 'deploy', 'base')]);
    for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 200))) {
      const sa = await cluster.api.get(`/api/v1/namespaces/${NS}/serviceaccounts/linkerd-cni`);
      if (sa.status === 200) break;
      if (Date.now() > deadline) throw new Error('the service account linkerd-cni never appeared');
    }
    const ds = await cluster.api.get<Meta>(`/apis/apps/v1/namespaces/${NS}/daemonsets/linkerd-cni`);
    cluster.daemonSetUid = ds.body?.metadata?.uid ?? '';
    return cluster;
  }

  get server(): string {
    return this.cp.server;
  }

  get ca(): string {
    return readFileSync(this.cp.pki.caCert, 'utf8');
  }

  /** A Node registered with the startup taint, as kubelet --register-with-taints would. */
  async createNode(name: string): Promise<void> {
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name } }, spec: { taints: [{ key: TAINT, effect: 'NoSchedule' }] } };
    const answer = await this.api.send('POST', '/api/v1/nodes', node);
    if (answer.status !== 201) throw new Error(`POST node ${name}: ${answer.status}`);
  }

  /** The agent's pod on `node`: bound to it, owned by the DaemonSet (not selected by it). */
  async createPod(name: string, node: string): Promise<{ name: string; uid: string }> {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels: { 'cni-chainer.io/fleet': 'agent' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'linkerd-cni', uid: this.daemonSetUid, controller: true }] },
      spec: { nodeName: node, serviceAccountName: 'linkerd-cni', tolerations: [{ operator: 'Exists' }], containers: [{ name: 'install-cni', image: 'cni-chainer:fleet' }] },
    };
    const answer = await this.api.send<Meta>('POST', `/api/v1/namespaces/${NS}/pods`, pod);
    if (answer.status !== 201) throw new Error(`POST pod ${name}: ${answer.status}`);
    return { name, uid: answer.body!.metadata!.uid! };
  }

  async deletePod(name: string): Promise<void> {
    await this.api.send('DELETE', `/api/v1/namespaces/${NS}/pods/${name}?gracePeriodSeconds=0`);
  }

  /** The projected token the kubelet would mount for the pod: bound to it (and naming its node). */
  async podToken(pod: { name: string; uid: string }): Promise<string> {
    const request = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 7200, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid } } };
    const answer = await this.api.send<{ status?: { token?: string } }>('POST', `/api/v1/namespaces/${NS}/serviceaccounts/linkerd-cni/token`, request);
    if (answer.status !== 201) throw new Error(`token for ${pod.name}: ${answer.status}`);
    return answer.body!.status!.token!;
  }

  /** The nodes that still carry the startup taint. */
  async tainted(): Promise<Set<string>> {
    const list = await this.api.get<{ items: Array<{ metadata: { name: string }; spec?: { taints?: Array<{ key: string }> } }> }>('/api/v1/nodes');
    return new Set(list.body!.items.filter((n) => n.spec?.taints?.some((t) => t.key === TAINT) === true).map((n) => n.metadata.name));
  }

  /** Puts the startup taint back on `node` (a node re-registered, for the next scenario). */
  async taint(node: string): Promise<void> {
    const patch = { spec: { taints: [{ key: TAINT, effect: 'NoSchedule' }] } };
    const answer = await this.api.send('PATCH', `/api/v1/nodes/${node}`, patch, 'application/merge-patch+json');
    if (answer.status !== 200) throw new Error(`taint ${node}: ${answer.status}`);
  }

  /** The agents' Events: per Event its node, reason and series count. */
  async events(): Promise<Array<{ node: string; reason: string; count: number }>> {
    const list = await this.api.get<{ items: Array<{ reportingController?: string; reason?: string; regarding?: { name?: string }; series?: { count?: number } }> }>('/apis/events.k8s.io/v1/namespaces/default/events');
    return list.body!.items.filter((e) => e.reportingController === 'cni-chainer').map((e) => ({ node: e.regarding?.name ?? '', reason: e.reason ?? '', count: e.series?.count ?? 1 }));
  }

  /** The API server's /metrics, parsed. */
  async scrape(): Promise<Scrape> {
    return parseScrape(await this.text('/metrics'));
  }

  /** A GET whose answer is text, not JSON. */
  private text(apiPath: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(new URL(apiPath, this.cp.server), { ca: readFileSync(this.cp.pki.caCert), headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, timeout: 30_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${apiPath}: ${res.statusCode}`))));
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${apiPath}: no answer`)));
      req.on('error', reject);
      req.end();
    });
  }

  async stop(): Promise<void> {
    await this.cp.stop();
  }
}
