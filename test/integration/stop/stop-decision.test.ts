// What a SIGTERM does, decided by the API server's answers about this agent's DaemonSet and Node
// (docs/design.md, Stop), against a server giving the answers the API server gives
// (test/fixtures/api/); the node's credential that outlives the pod (docs/design.md, The node's
// credential); and without an API server, the hand-over to an instance standing by. The real CLI,
// real files. The decision table itself is unit-tested row by row (test/kube/stop-decision.test.ts).
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACCESS_REVIEW, DAEMONSET, NODE, POD, RecordedApi, TOKEN_REQUEST, tokenAnswer, type Answers } from '../../helpers/api-answers.js';
import { fixture } from '../../helpers/fixtures.js';
import { NodeHost, type DaemonProcess } from '../../helpers/node-host.js';
import { nodeToken, podToken } from '../../helpers/tokens.js';
import { waitFor } from '../../helpers/wait.js';

const CONFIG = '10-flannel.conflist';
const KUBECONFIG = 'ZZZ-linkerd-cni-kubeconfig';

const binary = (host: NodeHost) => existsSync(path.join(host.binDir, 'linkerd-cni'));
const kubeconfigToken = (host: NodeHost) => JSON.parse(/^\s*token: (".*")$/m.exec(readFileSync(host.net(KUBECONFIG), 'utf8'))![1]!) as string;
const keptReason = (daemon: DaemonProcess) => daemon.stopReason('kept-chained');
const uninstallReason = (daemon: DaemonProcess) => daemon.stopReason('uninstalling');

/** The agent as the DaemonSet's pod on node-1, with its projected token and the API server's answers. */
async function agent(answers: Record<string, Answers>, options: { pod?: string; extra?: NodeJS.ProcessEnv; host?: NodeHost; api?: RecordedApi } = {}) {
  const pod = options.pod ?? podToken();
  const api = options.api ?? (await new RecordedApi(answers).start());
  const host = options.host ?? new NodeHost({ token: pod });
  if (options.host === undefined) host.putFixture(CONFIG);
  const daemon = await host.started({ ...api.env(), NODE_NAME: 'node-1', ...options.extra });
  await waitFor(() => host.isChained(CONFIG), 'chained');
  return { host, api, daemon, pod };
}

const STANDARD: Record<string, Answers> = { [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 200, fixture: 'daemonset.json' }, [NODE]: { status: 200, fixture: 'node.json' } };

describe("the node's credential outlives the pod", () => {
  it('the kubeconfig carries a token bound to the Node, asked with the pod token; a restart carries it on without asking again', async () => {
    const bound = nodeToken();
    const { host, api, daemon, pod } = await agent({ ...STANDARD, [TOKEN_REQUEST]: tokenAnswer(bound) });
    await waitFor(() => kubeconfigToken(host) === bound, 'the kubeconfig rewritten with the node token');
    const request = api.requests.find((r) => `${r.method} ${r.url}` === TOKEN_REQUEST)!;
    expect(request.authorization).toBe(`Bearer ${pod}`);
    expect(JSON.parse(request.body)).toMatchObject({ kind: 'TokenRequest', spec: { expirationSeconds: 86_400, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: 'node-1' } } });
    expect((await daemon.stop()).code).toBe(0);
    expect(kubeconfigToken(host)).toBe(bound);
    // The next pod: the node token on disk fits this node and account, so nothing is asked or written.
    const asked = api.requests.length;
    const written = statSync(host.net(KUBECONFIG));
    const next = await host.started({ ...api.env(), NODE_NAME: 'node-1', POD_NAME: 'linkerd-cni-n3xt1' });
    await waitFor(() => api.requests.slice(asked).some((r) => `${r.method} ${r.url}`.startsWith('GET /api/v1/namespaces/linkerd-cni/pods/')), 'the owner asked');
    expect(api.requests.slice(asked).filter((r) => `${r.method} ${r.url}` === TOKEN_REQUEST)).toEqual([]);
    expect(kubeconfigToken(host)).toBe(bound);
    expect([statSync(host.net(KUBECONFIG)).ino, statSync(host.net(KUBECONFIG)).mtimeMs]).toEqual([written.ino, written.mtimeMs]);
    expect((await next.stop()).code).toBe(0);
  });

  it("a token request refused (old RBAC): the kubeconfig keeps the pod's token, said once, and asked again later", async () => {
    const { host, api, daemon, pod } = await agent({ ...STANDARD, [TOKEN_REQUEST]: { status: 403, fixture: 'forbidden.json' } });
    // Retried after ~1 s, then ~2 s: the same problem is not logged again.
    await waitFor(() => api.requests.filter((r) => `${r.method} ${r.url}` === TOKEN_REQUEST).length >= 2, 'asked again', 5_000);
    expect(kubeconfigToken(host)).toBe(pod);
    expect(daemon.count('cannot get a token bound to this node: the kubeconfig keeps the token it has (the pod\'s own dies with this pod)')).toBe(1);
    expect((await daemon.stop()).code).toBe(0);
  });
});

describe('SIGTERM asks the API server: uninstall or replacement', () => {
  it('a forced delete: the pod object and its token are gone, the node token asks, the DaemonSet still targets the node: everything stays', async () => {
    const bound = nodeToken();
    const { host, api, daemon, pod } = await agent({ ...STANDARD, [TOKEN_REQUEST]: tokenAnswer(bound) });
    await waitFor(() => kubeconfigToken(host) === bound, 'the node token in the kubeconfig');
    api.refused.add(pod);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    expect(kubeconfigToken(host)).toBe(bound);
    expect(keptReason(daemon)).toMatch(/still runs a pod on this node/);
    expect(api.sentWith(bound)).toEqual([DAEMONSET, NODE]);
  });

  it('the DaemonSet no longer selects this node (its nodeSelector changed): an uninstall, the node byte-identical', async () => {
    const bound = nodeToken();
    const { host, daemon } = await agent({ ...STANDARD, [DAEMONSET]: { status: 200, fixture: 'daemonset-elsewhere.json' }, [TOKEN_REQUEST]: tokenAnswer(bound) });
    await waitFor(() => kubeconfigToken(host) === bound, 'the node token in the kubeconfig');
    expect((await daemon.stop()).code).toBe(0);
    expect(uninstallReason(daemon)).toMatch(/no longer runs a pod on node node-1: its nodeSelector .*pool=gpu/);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
    expect(existsSync(host.net(KUBECONFIG))).toBe(false);
  });

  it("the service account deleted: both tokens refused (401): an uninstall", async () => {
    const bound = nodeToken();
    const { host, api, daemon, pod } = await agent({ ...STANDARD, [TOKEN_REQUEST]: tokenAnswer(bound) });
    await waitFor(() => kubeconfigToken(host) === bound, 'the node token in the kubeconfig');
    api.refused.add(pod);
    api.refused.add(bound);
    expect((await daemon.stop()).code).toBe(0);
    expect(uninstallReason(daemon)).toMatch(/service account is gone/);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
  });

  it('the DaemonSet is gone: an uninstall, the node byte-identical', async () => {
    const { host, exit } = await agent({ ...STANDARD, [DAEMONSET]: { status: 404, fixture: 'not-found.json' } }).then(async (a) => ({ ...a, exit: await a.daemon.stop() }));
    expect(exit.code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
    expect(existsSync(host.net(KUBECONFIG))).toBe(false);
  });

  it('the DaemonSet is being deleted: an uninstall', async () => {
    const { host, daemon } = await agent({ ...STANDARD, [DAEMONSET]: { status: 200, fixture: 'daemonset-deleting.json' } });
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
  });

  it('the DaemonSet is there and targets the node (a restart, rollout, eviction or drain): configs, binary and kubeconfig stay', async () => {
    const { host, daemon } = await agent(STANDARD);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    expect(existsSync(host.net(KUBECONFIG))).toBe(true);
    expect(keptReason(daemon)).toMatch(/still runs a pod on this node/);
  });

  it("the account may no longer get pods (deploy/'s RBAC deleted): an uninstall, since the plugin it shares would fail every ADD", async () => {
    const { host, daemon } = await agent({ ...STANDARD, [DAEMONSET]: { status: 403, fixture: 'forbidden.json' }, [ACCESS_REVIEW]: { status: 201, body: { status: { allowed: false } } } });
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
    expect(uninstallReason(daemon)).toMatch(/may no longer get pods/);
  });

  it('the DaemonSet cannot be read (403) while pods can: everything stays, and the log says why', async () => {
    const { host, daemon } = await agent({ ...STANDARD, [DAEMONSET]: { status: 403, fixture: 'forbidden.json' }, [ACCESS_REVIEW]: { status: 201, body: { status: { allowed: true } } } });
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    expect(keptReason(daemon)).toMatch(/403.*may still get pods/);
  });

  it('the API server fails (500): everything stays', async () => {
    const { host, daemon } = await agent({ ...STANDARD, [DAEMONSET]: { status: 500, fixture: 'forbidden.json' } });
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
  });

  it('the API server does not answer: everything stays, and the stop keeps its deadline', async () => {
    const { host, daemon } = await agent({ [POD]: 'no answer' }, { extra: { SHUTDOWN_TIMEOUT_S: '8' } });
    const started = performance.now();
    expect((await daemon.stop()).code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    // The owner asked at the stop timed out at a fifth of the deadline (1.6 s), well within it.
    expect(performance.now() - started).toBeLessThan(8_000);
    expect(keptReason(daemon)).toMatch(/unknown/);
  });

  it('CLEANUP_ON_STOP=always uninstalls and never asks; never keeps and never asks', async () => {
    const ownerAsked = (api: RecordedApi) => waitFor(() => api.requests.some((r) => `${r.method} ${r.url}` === POD), 'the owner asked after the start');
    const always = await agent({}, { extra: { CLEANUP_ON_STOP: 'always', NODE_NAME: '' } });
    await ownerAsked(always.api);
    const beforeStop = always.api.requests.length;
    expect((await always.daemon.stop()).code).toBe(0);
    expect(always.host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(always.api.requests.length).toBe(beforeStop);
    const never = await agent({}, { extra: { CLEANUP_ON_STOP: 'never', NODE_NAME: '' } });
    await ownerAsked(never.api);
    const neverBefore = never.api.requests.length;
    expect((await never.daemon.stop()).code).toBe(0);
    expect(never.host.isChained(CONFIG)).toBe(true);
    expect(never.api.requests.length).toBe(neverBefore);
  });
});

describe('without an API server', () => {
  it('hands the node to an instance standing by without unchaining it, sampled every 20 ms', async () => {
    const host = new NodeHost({ token: false });
    host.putFixture(CONFIG);
    const older = await host.startedWithProbes();
    await waitFor(() => host.isChained(CONFIG), 'chained');
    const newer = await host.started();
    await older.stoodDown();
    let unchainedSamples = 0;
    const sampler = setInterval(() => {
      if (!host.isChained(CONFIG)) unchainedSamples++;
    }, 20);
    try {
      expect((await newer.stop()).code).toBe(0);
      await older.ready();
      // The older one maintains the node again: a config that appears now is chained.
      host.putFixture('10-aws.conflist');
      await waitFor(() => host.isChained('10-aws.conflist'), 'chained by the instance that took the node back');
    } finally {
      clearInterval(sampler);
    }
    expect(unchainedSamples).toBe(0);
    expect(keptReason(newer)).toContain('stands by');
    // The last one out cleans up.
    expect((await older.stop()).code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
  });
});
