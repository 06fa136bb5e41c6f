// The manifests and the agent against a real control plane (bench/cluster/control-plane.ts): etcd,
// kube-apiserver with its authorizers and admission plugins, the controller manager and the
// scheduler, all built from their Go modules. deploy/base is applied with kubectl as operators apply
// it; the DaemonSet controller makes a pod for each node and the scheduler binds it. There is no
// kubelet here: the agent runs as a process on a scratch node, with the service-account token the
// API server issues for the pod on that node, and the test sends the SIGTERM a kubelet would.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture } from '../helpers/fixtures.js';
import { freePort, NodeHost, probe, type DaemonProcess } from '../helpers/node-host.js';
import { repoRoot } from '../helpers/addon-path.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';
import { ControlPlane, clusterBinDir } from '../../bench/cluster/control-plane.js';
import { tokenClaims } from '../../src/kube/token-claims.js';

const NS = 'linkerd-cni';
const TAINT = 'cni-chainer.io/agent-not-ready';
const CONFIG = '10-flannel.conflist';

interface PodInfo {
  name: string;
  uid: string;
  node: string;
}

let cp: ControlPlane;
const pods = new Map<string, PodInfo>();

function json<T>(args: string[]): T {
  return JSON.parse(cp.kubectl([...args, '-o', 'json'])) as T;
}

function taintsOf(node: string): string[] {
  return (json<{ spec: { taints?: Array<{ key: string }> } }>(['get', 'node', node]).spec.taints ?? []).map((t) => t.key);
}

/** A pod-bound token for the DaemonSet's pod on `node`, as the kubelet mounts it. */
function serviceAccountDir(node: string): string {
  const pod = pods.get(node)!;
  const dir = tempDir('cc-sa-');
  const token = cp.kubectl(['create', 'token', 'linkerd-cni', '-n', NS, '--bound-object-kind', 'Pod', '--bound-object-name', pod.name, '--bound-object-uid', pod.uid, '--duration', '1h']).trim();
  writeFileSync(path.join(dir, 'token'), token);
  writeFileSync(path.join(dir, 'ca.crt'), readFileSync(cp.pki.caCert));
  writeFileSync(path.join(dir, 'namespace'), NS);
  return dir;
}

/** The agent on the scratch node `host`, as the pod on `node`. */
async function agentOn(host: NodeHost, node: string, extra: NodeJS.ProcessEnv = {}): Promise<{ daemon: DaemonProcess; port: number; saDir: string }> {
  const port = await freePort();
  const saDir = serviceAccountDir(node);
  const daemon = await host.started({
    SERVICEACCOUNT_PATH: saDir,
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: String(cp.apiPort),
    POD_NAME: pods.get(node)!.name,
    POD_NAMESPACE: NS,
    NODE_NAME: node,
    HEALTH_PORT: String(port),
    ...extra,
  });
  return { daemon, port, saDir };
}

beforeAll(async () => {
  // The suite's own directory: tempDir's go after each test, the cluster lives for the file.
  cp = new ControlPlane(mkdtempSync(path.join(tmpdir(), 'cc-cluster-')), clusterBinDir());
  await cp.start();
  // Two nodes, registered with the startup taint as kubelet --register-with-taints would.
  for (const node of ['node-a', 'node-b']) {
    cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': node } }, spec: { taints: [{ key: TAINT, effect: 'NoSchedule' }] } }) });
    // What a kubelet reports of its node: without it the scheduler finds no room for a pod.
    const room = { cpu: '2', memory: '4Gi', pods: '110' };
    cp.kubectl(['patch', 'node', node, '--subresource=status', '--type', 'merge', '-p', JSON.stringify({ status: { capacity: room, allocatable: room } })]);
  }
  cp.kubectl(['apply', '-k', path.join(repoRoot, 'deploy', 'base')]);
  await waitFor(
    () => {
      const list = json<{ items: Array<{ metadata: { name: string; uid: string }; spec: { nodeName?: string } }> }>(['get', 'pods', '-n', NS]).items;
      for (const p of list) if (p.spec.nodeName !== undefined) pods.set(p.spec.nodeName, { name: p.metadata.name, uid: p.metadata.uid, node: p.spec.nodeName });
      return pods.size === 2;
    },
    'the DaemonSet pod of each node, scheduled',
    60_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${cp.logTail('kube-controller-manager', 15)}\n${cp.logTail('kube-scheduler', 15)}`);
  });
}, 600_000);

afterAll(async () => {
  await cp?.stop();
  if (cp !== undefined) rmSync(cp.dir, { recursive: true, force: true });
});

describe('deploy/base on a real API server', () => {
  it('is admitted as applied: the Pod Security label and the quota for system-node-critical let its pods in', () => {
    expect([...pods.keys()].sort()).toEqual(['node-a', 'node-b']);
    // The same pod in a namespace with neither: refused by each admission plugin in turn.
    const pod = json<Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> }>(['get', 'pod', '-n', NS, pods.get('node-a')!.name]);
    const copy = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'copy' }, spec: { ...pod.spec, nodeName: undefined, serviceAccountName: undefined, serviceAccount: undefined, volumes: (pod.spec.volumes as Array<{ name: string }>).filter((v) => !v.name.startsWith('kube-api-access')), containers: (pod.spec.containers as Array<{ volumeMounts: Array<{ name: string }> }>).map((c) => ({ ...c, volumeMounts: c.volumeMounts.filter((m) => !m.name.startsWith('kube-api-access')) })) } };
    cp.kubectl(['create', 'namespace', 'baseline']);
    cp.kubectl(['label', 'namespace', 'baseline', 'pod-security.kubernetes.io/enforce=baseline']);
    expect(() => cp.kubectl(['create', '-n', 'baseline', '-f', '-'], { input: JSON.stringify(copy) })).toThrow(/violates PodSecurity "baseline:latest".*hostPath/s);
    cp.kubectl(['create', 'namespace', 'no-quota']);
    cp.kubectl(['label', 'namespace', 'no-quota', 'pod-security.kubernetes.io/enforce=privileged']);
    expect(() => cp.kubectl(['create', '-n', 'no-quota', '-f', '-'], { input: JSON.stringify(copy) })).toThrow(/insufficient quota to match these scopes/);
  });

  it('grants the service account exactly what the agent and the plugin use', () => {
    const sa = `system:serviceaccount:${NS}:linkerd-cni`;
    const can = (verb: string, resource: string, ns?: string) => {
      try {
        return cp.kubectl(['auth', 'can-i', verb, resource, '--as', sa, ...(ns === undefined ? [] : ['-n', ns])]).trim() === 'yes';
      } catch {
        return false;
      }
    };
    expect(can('get', 'pods', 'default')).toBe(true);
    // No repair controller runs: no pod deletion, no Events beyond the agent's own in default.
    expect(can('delete', 'pods', 'default')).toBe(false);
    expect(can('create', 'events.events.k8s.io', 'kube-system')).toBe(false);
    expect(can('create', 'serviceaccounts/linkerd-cni', NS)).toBe(false);
    expect(can('create', 'serviceaccounts/token', NS)).toBe(false);
    expect(can('get', 'daemonsets.apps/linkerd-cni', NS)).toBe(true);
    expect(can('get', 'daemonsets.apps/other', NS)).toBe(false);
    expect(can('get', 'daemonsets.apps/linkerd-cni', 'default')).toBe(false);
    expect(can('patch', 'nodes')).toBe(true);
    expect(can('update', 'nodes')).toBe(false);
    expect(can('delete', 'nodes')).toBe(false);
    expect(can('create', 'events.events.k8s.io', 'default')).toBe(true);
    expect(can('patch', 'events.events.k8s.io', 'default')).toBe(true);
    expect(can('get', 'secrets', NS)).toBe(false);
    expect(can('create', 'pods', NS)).toBe(false);
    // The whole list: nothing beyond the manifest's rules and what every authenticated user gets.
    const list = cp.kubectl(['auth', 'can-i', '--list', '--as', sa, '-n', NS]);
    const resources = list
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/)[0])
      .filter((r): r is string => r !== undefined && r !== '' && !r.startsWith('['));
    // (clustertrustbundles: every authenticated user may read them, system:basic-user.)
    const expected = ['clustertrustbundles.certificates.k8s.io', 'pods', 'nodes', 'namespaces', 'services', 'events.events.k8s.io', 'daemonsets.apps', 'serviceaccounts/token', 'selfsubjectreviews.authentication.k8s.io', 'selfsubjectaccessreviews.authorization.k8s.io', 'selfsubjectrulesreviews.authorization.k8s.io'];
    expect(resources.filter((r) => !expected.includes(r))).toEqual([]);
  });
});

/** PATCH requests on Nodes the API server refused (403 or 422), from its own /metrics. */
function nodePatchesRefused(): number {
  let refused = 0;
  for (const line of cp.kubectl(['get', '--raw', '/metrics']).split('\n')) {
    if (!line.startsWith('apiserver_request_total{') || !line.includes('resource="nodes"') || !line.includes('verb="PATCH"')) continue;
    if (line.includes('code="403"') || line.includes('code="422"')) refused += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return refused;
}

/** The status the API server answers `token` for a GET of `apiPath`. */
async function apiAnswer(token: string, apiPath: string): Promise<number> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(`${cp.server}${apiPath}`, { ca: readFileSync(cp.pki.caCert), headers: { authorization: `Bearer ${token.trim()}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const kubeconfigToken = (host: NodeHost) => JSON.parse(/^\s*token: (".*")$/m.exec(host.read('ZZZ-linkerd-cni-kubeconfig'))![1]!) as string;

/** Waits for the DaemonSet's new pod on `node` (after `old` went), and records it. */
async function waitForPod(node: string, old: string): Promise<void> {
  await waitFor(
    () => {
      const list = json<{ items: Array<{ metadata: { name: string; uid: string }; spec: { nodeName?: string } }> }>(['get', 'pods', '-n', NS]).items;
      const fresh = list.find((p) => p.spec.nodeName === node && p.metadata.name !== old);
      if (fresh !== undefined) pods.set(node, { name: fresh.metadata.name, uid: fresh.metadata.uid, node });
      return fresh !== undefined;
    },
    `a new pod on ${node}`,
    30_000,
  );
}

describe("the node's token (TokenRequest bound to the Node), as the token policy allows it", () => {
  const request = (token: string, body: unknown) => {
    try {
      return cp.kubectl(['create', '--raw', `/api/v1/namespaces/${NS}/serviceaccounts/linkerd-cni/token`, '-f', '-'], { token, input: JSON.stringify(body) });
    } catch (err) {
      return (err as Error).message;
    }
  };
  const forNode = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 86_400, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name }, ...extra } });

  it("node-a's pod may ask for a token bound to node-a, for at most two days, and nothing else", () => {
    const podTokenA = readFileSync(path.join(serviceAccountDir('node-a'), 'token'), 'utf8');
    const issued = JSON.parse(request(podTokenA, forNode('node-a'))) as { status: { token: string } };
    expect(tokenClaims(issued.status.token)?.node?.name).toBe('node-a');
    expect(request(podTokenA, forNode('node-b'))).toMatch(/the agent may only ask for a token bound to the node its pod runs on/);
    expect(request(podTokenA, { ...forNode('node-a'), spec: { expirationSeconds: 86_400, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pods.get('node-b')!.name } } })).toMatch(/the agent may only ask for a token bound to the node its pod runs on/);
    expect(request(podTokenA, { ...forNode('node-a'), spec: { expirationSeconds: 30 * 86_400, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: 'node-a' } } })).toMatch(/at most two days/);
    // A node token asks for nothing: one that leaks from net.d cannot renew itself.
    expect(request(issued.status.token, forNode('node-a'))).toMatch(/only the agent's pod may ask for a node token/);
  });

  it("a node token may remove its own node's taint and no other node's", () => {
    const podTokenA = readFileSync(path.join(serviceAccountDir('node-a'), 'token'), 'utf8');
    const nodeTokenA = (JSON.parse(request(podTokenA, forNode('node-a'))) as { status: { token: string } }).status.token;
    const removeTaint = JSON.stringify([{ op: 'test', path: '/spec/taints', value: [{ key: TAINT, effect: 'NoSchedule' }] }, { op: 'replace', path: '/spec/taints', value: [] }]);
    expect(() => cp.kubectl(['patch', 'node', 'node-b', '--type', 'json', '-p', removeTaint, '--dry-run=server'], { token: nodeTokenA })).toThrow(/the agent may change only the node its pod runs on/);
  });
});

describe("what node-a's own token may do to Nodes and Events (server-side dry runs)", () => {
  const bearer = () => readFileSync(path.join(serviceAccountDir('node-a'), 'token'), 'utf8');
  /** kubectl as node-a's agent, server-side dry run: '' when allowed, else the API server's words. */
  const attempt = (args: string[], input?: string) => {
    try {
      cp.kubectl([...args, '--dry-run=server'], { token: bearer(), input });
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  const patchNode = (node: string, ops: unknown[]) => attempt(['patch', 'node', node, '--type', 'json', '-p', JSON.stringify(ops)]);

  it('only the removal of the startup taint from its own node passes; every other change of the Node is Forbidden, saying why', () => {
    cp.kubectl(['taint', 'node', 'node-a', `${TAINT}:NoSchedule`, '--overwrite']);
    try {
      const taints = json<{ spec: { taints: unknown[] } }>(['get', 'node', 'node-a']).spec.taints;
      const remove = [{ op: 'test', path: '/spec/taints', value: taints }, { op: 'replace', path: '/spec/taints', value: [] }];
      expect(patchNode('node-a', remove)).toBe('');
      const refused: Array<[string, unknown[], RegExp]> = [
        ['a finalizer', [{ op: 'add', path: '/metadata/finalizers', value: ['example.com/hold'] }], /its metadata may not change/],
        ['an ownerReference naming a missing owner', [{ op: 'add', path: '/metadata/ownerReferences', value: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'gone', uid: '00000000-0000-0000-0000-000000000000' }] }], /its metadata may not change/],
        ['the taint removed and a finalizer added, in one patch', [...remove, { op: 'add', path: '/metadata/finalizers', value: ['example.com/hold'] }], /its metadata may not change/],
        ['a label', [{ op: 'add', path: '/metadata/labels/evil', value: 'yes' }], /its metadata may not change/],
        ['an annotation', [{ op: 'add', path: '/metadata/annotations', value: { evil: 'yes' } }], /its metadata may not change/],
        ['unschedulable', [{ op: 'add', path: '/spec/unschedulable', value: true }], /the rest of its spec may not change/],
        ['the podCIDR', [{ op: 'add', path: '/spec/podCIDR', value: '10.9.0.0/24' }], /the rest of its spec may not change/],
        ['another taint', [{ op: 'add', path: '/spec/taints/-', value: { key: 'other', effect: 'NoExecute' } }], /change no other taint/],
      ];
      for (const [what, ops, message] of refused) {
        const answer = patchNode('node-a', ops);
        expect(answer, what).toMatch(/\(Forbidden\)/);
        expect(answer, what).toMatch(message);
      }
      expect(patchNode('node-b', [{ op: 'replace', path: '/spec/taints', value: [] }])).toMatch(/\(Forbidden\).*may change only the node its pod runs on \(node-a\), not node-b/s);
    } finally {
      cp.kubectl(['taint', 'node', 'node-a', `${TAINT}:NoSchedule-`]);
    }
  });

  it('may write Events about its own Node in default, reported by cni-chainer, and nothing else', () => {
    const event = (ns: string, regarding: Record<string, string>, controller = 'cni-chainer') =>
      JSON.stringify({ apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: `probe.${Math.random().toString(16).slice(2)}`, namespace: ns }, eventTime: new Date().toISOString().replace('Z', '000Z'), reportingController: controller, reportingInstance: 'x', action: 'Probe', reason: 'Probe', regarding, note: 'probe', type: 'Normal' });
    const create = (ns: string, regarding: Record<string, string>, controller?: string) => attempt(['create', '-f', '-'], event(ns, regarding, controller));
    const nodeA = { apiVersion: 'v1', kind: 'Node', name: 'node-a' };
    expect(create('default', nodeA)).toBe('');
    expect(create('kube-system', { apiVersion: 'v1', kind: 'Pod', name: 'kube-dns', namespace: 'kube-system' }, 'kubelet')).toMatch(/\(Forbidden\).*cannot create resource "events"/s);
    expect(create('default', { apiVersion: 'v1', kind: 'Pod', name: 'web', namespace: 'default' })).toMatch(/\(Forbidden\).*only write Events about the node its pod runs on/s);
    expect(create('default', { ...nodeA, name: 'node-b' })).toMatch(/\(Forbidden\).*only write Events about the node its pod runs on/s);
    expect(create('default', nodeA, 'kubelet')).toMatch(/\(Forbidden\).*only write Events reported by cni-chainer/s);
  });
});

describe('the agent with its pod-bound token', () => {
  it('takes the startup taint off its own node once chained, and says so in an Event', async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const { daemon, port } = await agentOn(host, 'node-a');
    await waitFor(async () => (await probe(port, '/readyz')).status === 200, 'ready');
    await waitFor(() => !taintsOf('node-a').includes(TAINT), 'the taint removed from node-a', 20_000);
    // The other node keeps its taint: its own agent has not chained it.
    expect(taintsOf('node-b')).toContain(TAINT);
    await waitFor(() => cp.kubectl(['events', '--for', 'node/node-a']).includes('Chained'), 'the Chained event on node-a', 20_000);
    // A restart: the DaemonSet is there, so the node stays chained and the binary stays.
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
  });

  it("refuses node-a's token any change to node-b, and any change to node-a but the taint's removal", () => {
    const token = serviceAccountDir('node-a');
    const bearer = readFileSync(path.join(token, 'token'), 'utf8');
    const removeTaint = JSON.stringify([{ op: 'test', path: '/spec/taints', value: [{ key: TAINT, effect: 'NoSchedule' }] }, { op: 'replace', path: '/spec/taints', value: [] }]);
    expect(() => cp.kubectl(['patch', 'node', 'node-b', '--type', 'json', '-p', removeTaint], { token: bearer })).toThrow(/the agent may change only the node its pod runs on/);
    expect(taintsOf('node-b')).toContain(TAINT);
    expect(() => cp.kubectl(['label', 'node', 'node-a', 'evil=yes'], { token: bearer })).toThrow(/the agent may only remove its startup taint/);
    expect(() => cp.kubectl(['taint', 'node', 'node-a', 'other=x:NoSchedule'], { token: bearer })).toThrow(/the agent may only remove its startup taint/);
  });

  it("asks for a token bound to its Node, and the kubeconfig carries it: a forced delete of its pod leaves the node chained", async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const { daemon, saDir } = await agentOn(host, 'node-a');
    await waitFor(() => tokenClaims(kubeconfigToken(host))?.pod === undefined, 'the kubeconfig rewritten with a node token', 20_000);
    const claims = tokenClaims(kubeconfigToken(host))!;
    expect(claims.node?.name).toBe('node-a');
    expect(claims.expiresAt - claims.issuedAt).toBe(86_400);
    // The pod object goes at once, its token with it; the DaemonSet controller makes a new one.
    const old = pods.get('node-a')!;
    cp.kubectl(['delete', 'pod', '-n', NS, old.name, '--force', '--grace-period=0']);
    // The API server refuses the pod's token once its pod is gone from its cache.
    const podToken = readFileSync(path.join(saDir, 'token'), 'utf8');
    await waitFor(async () => (await apiAnswer(podToken, `/api/v1/namespaces/${NS}/pods/${old.name}`)) === 401, "the pod's token refused");
    // The plugin's credential still works.
    expect(await apiAnswer(kubeconfigToken(host), '/api/v1/namespaces/default/pods')).toBe(200);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(daemon.stopReason('kept-chained')).toMatch(/still runs a pod on this node/);
    await waitForPod('node-a', old.name);
  });

  it("a NODE_TAINT_KEY the policy does not allow: the API server's denial (403) logged once, the taint left, and asked again only after a backoff", async () => {
    cp.kubectl(['taint', 'node', 'node-b', 'example.com/other:NoSchedule']);
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const refusedBefore = nodePatchesRefused();
    const { daemon } = await agentOn(host, 'node-b', { NODE_TAINT_KEY: 'example.com/other' });
    try {
      // The denial as the API server counts it, then the agent's backoff: retried after 1 s, 2 s, 4 s.
      await waitFor(() => nodePatchesRefused() > refusedBefore, 'the API server refusing the taint patch', 20_000);
      await new Promise((r) => setTimeout(r, 4_000));
      expect(nodePatchesRefused() - refusedBefore).toBeLessThanOrEqual(4);
      // Said once, with the policy's words, not once per retry.
      const denials = daemon.logs.items.filter((l) => l.msg === 'the API server refused to remove the startup taint: pods cannot be scheduled on this node until it is removed');
      expect(denials.map((l) => String(l.denial))).toEqual([expect.stringMatching(/the agent may only remove its startup taint cni-chainer.io\/agent-not-ready from node node-b, and change no other taint/)]);
      expect(taintsOf('node-b')).toContain('example.com/other');
      expect((await daemon.stop()).code).toBe(0);
    } finally {
      cp.kubectl(['taint', 'node', 'node-b', 'example.com/other:NoSchedule-']);
    }
  });

  it('a DaemonSet whose nodeSelector no longer matches the node: the SIGTERM uninstalls it', async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const { daemon } = await agentOn(host, 'node-b');
    await waitFor(() => tokenClaims(kubeconfigToken(host))?.pod === undefined, 'the node token', 20_000);
    cp.kubectl(['label', 'node', 'node-b', 'cni=off']);
    cp.kubectl(['patch', 'daemonset', '-n', NS, 'linkerd-cni', '--type', 'json', '-p', JSON.stringify([{ op: 'add', path: '/spec/template/spec/affinity', value: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'cni', operator: 'NotIn', values: ['off'] }] }] } } } }])]);
    try {
      expect((await daemon.stop()).code).toBe(0);
      expect(daemon.stopReason('uninstalling')).toMatch(/no longer runs a pod on node node-b: its required node affinity/);
      expect(host.read(CONFIG)).toBe(fixture(CONFIG));
      expect(readdirSync(host.netDir)).toEqual([CONFIG]);
      expect(readdirSync(host.binDir)).toEqual([]);
    } finally {
      cp.kubectl(['patch', 'daemonset', '-n', NS, 'linkerd-cni', '--type', 'json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/template/spec/affinity' }])]);
      cp.kubectl(['label', 'node', 'node-b', 'cni-']);
    }
  });

  it('kubectl delete -k deploy/base: the SIGTERM that follows uninstalls, and the node is byte-identical', async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const { daemon } = await agentOn(host, 'node-b');
    await waitFor(() => host.isChained(CONFIG), 'chained');
    cp.kubectl(['delete', '-k', path.join(repoRoot, 'deploy', 'base'), '--wait=false']);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(daemon.stopSteps().map((s) => s.step)).toContain('uninstalling');
    expect(readdirSync(host.netDir)).toEqual([CONFIG]);
    expect(readdirSync(host.binDir)).toEqual([]);
  });
});
