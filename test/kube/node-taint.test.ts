// Node gating's patch: a test op on the taints as read, so that a concurrent change to them (a failed
// test, 422) is read again at once and never overwritten; the other taints stay. A denial (403, or a
// policy's 422 without a reason) is said once, with the API server's words, and tried again later.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/kube/api-client.js';
import { FIRST_RETRY_MS, NodeTaint, nextRetryMs } from '../../src/kube/node-taint.js';
import { RecordedApi, type Answers } from '../helpers/api-answers.js';
import { waitFor } from '../helpers/wait.js';

const NODE = '/api/v1/nodes/node-1';
const KEY = 'cni-chainer.io/agent-not-ready';

async function taintWith(patch: Answers) {
  const api = await new RecordedApi({ [`GET ${NODE}`]: { status: 200, fixture: 'node-tainted.json' }, [`PATCH ${NODE}`]: patch }).start();
  const client = new ApiClient({ server: `http://127.0.0.1:${api.port}`, token: () => 'token-1', caFile: undefined, timeoutMs: 2_000 });
  const lines: Array<{ msg: string; level: number; denial?: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; level: number }) });
  return { api, taint: new NodeTaint(client, 'node-1', KEY, log), lines };
}

describe('the startup taint', () => {
  it('is removed by a patch that tests the taints as read, read again when they changed meanwhile', async () => {
    const { api, taint } = await taintWith([{ status: 422, fixture: 'invalid-test-op.json' }, { status: 200, fixture: 'node-tainted.json' }]);
    expect(await taint.ready()).toBe('removed');
    expect(api.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${NODE}`, `PATCH ${NODE}`, `GET ${NODE}`, `PATCH ${NODE}`]);
    const patch = JSON.parse(api.requests[3]!.body) as Array<{ op: string; path: string; value: unknown }>;
    expect(patch).toEqual([
      { op: 'test', path: '/spec/taints', value: [{ key: KEY, effect: 'NoSchedule' }, { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
      { op: 'replace', path: '/spec/taints', value: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
    ]);
  });

  it.each([
    ['a 403 (the policy with reason Forbidden, or no RBAC)', { status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden', message: 'nodes "node-1" is forbidden: the agent may only remove its startup taint example.com/other from node node-1' } }],
    ["a policy's 422 without a reason (older manifests)", { status: 422, body: { kind: 'Status', code: 422, reason: 'Invalid', message: "nodes \"node-1\" is invalid: : ValidatingAdmissionPolicy 'linkerd-cni-node-taint' with binding 'linkerd-cni-node-taint' denied request: the agent may only remove its startup taint" } }],
  ])('a denial, %s: said once with the API server\'s words, tried again later, not at once', async (_, answer) => {
    const { api, taint, lines } = await taintWith(answer as Answers);
    void taint.ready();
    await waitFor(() => api.requests.filter((r) => r.method === 'PATCH').length >= 2, 'a second attempt, after the backoff', 5_000);
    const denials = lines.filter((l) => l.msg === 'the API server refused to remove the startup taint: pods cannot be scheduled on this node until it is removed');
    expect(denials).toHaveLength(1);
    expect(denials[0]!.denial).toContain('the agent may only remove its startup taint');
    // Not the conflict loop: one patch per attempt, the second after the first backoff (1 s ± 20%).
    const patches = api.requests.filter((r) => r.method === 'PATCH');
    expect(patches).toHaveLength(2);
    taint.dispose();
    expect(await taint.ready()).toBe('stopped');
  });

  it('retries double from 1 s and stop at 15 s: after an outage of any length a node is untainted at most ~18 s after the API server is back', () => {
    const waits = [FIRST_RETRY_MS];
    for (let i = 0; i < 20; i++) waits.push(nextRetryMs(waits.at(-1)!));
    expect(waits.slice(0, 6)).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000]);
    // The longest wait, jittered +20%: the most a node can miss the API server's return by.
    expect(Math.max(...waits) * 1.2).toBeLessThanOrEqual(18_000);
  });
});
