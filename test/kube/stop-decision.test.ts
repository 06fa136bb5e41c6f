// The stop's decision table (src/kube/stop-decision.ts, docs/design.md, Stop), row by row: what the
// API server answered in, uninstall or keep out. Pure; the questions are asked by stop-facts.ts
// (test/integration/stop/stop-decision.test.ts drives both through the CLI).
import { describe, expect, it } from 'vitest';
import { decideStop, needsAccessReview, type StopFacts } from '../../src/kube/stop-decision.js';

const ok = <T>(body: T) => ({ status: 200, body });
const status = (s: number) => ({ status: s, body: undefined });
const ds = ok({ metadata: { uid: 'ds-1' }, spec: { template: { spec: { tolerations: [{ operator: 'Exists' }], nodeSelector: { 'kubernetes.io/os': 'linux' } } } } });
const node = ok({ metadata: { name: 'node-1', labels: { 'kubernetes.io/os': 'linux' } }, spec: { taints: [] } });
const base: StopFacts = { owner: { name: 'linkerd-cni' }, credential: 'node', daemonSet: ds, nodeName: 'node-1', node };

const rows: Array<[string, Partial<StopFacts>, 'keep' | 'uninstall', RegExp]> = [
  ['the DaemonSet exists and still targets this node', {}, 'keep', /still runs a pod on this node/],
  ['the DaemonSet is gone (404)', { daemonSet: status(404) }, 'uninstall', /is gone/],
  ['the DaemonSet is being deleted', { daemonSet: ok({ metadata: { deletionTimestamp: '2026-12-07T00:00:00Z' } }) }, 'uninstall', /being deleted/],
  ['the DaemonSet no longer selects this node', { daemonSet: ok({ spec: { template: { spec: { nodeSelector: { pool: 'b' } } } } }) }, 'uninstall', /no longer runs a pod on node node-1: its nodeSelector pool=b/],
  ['the node carries a taint the DaemonSet does not tolerate', { daemonSet: ok({ spec: { template: { spec: {} } } }), node: ok({ spec: { taints: [{ key: 'x', effect: 'NoExecute' }] } }) }, 'uninstall', /does not tolerate the node's taint x:NoExecute/],
  ['no answer for the DaemonSet', { daemonSet: { error: 'ETIMEDOUT' } }, 'keep', /did not answer.*ETIMEDOUT/],
  ['a server error for the DaemonSet', { daemonSet: status(500) }, 'keep', /answered 500/],
  ["the node's token and the pod's both refused (401): the account is gone", { daemonSet: status(401), daemonSetByPod: status(401) }, 'uninstall', /service account is gone/],
  ["the node's token refused, the pod's not asked (no pod token)", { daemonSet: status(401) }, 'uninstall', /service account is gone/],
  ["the node's token refused (the Node registered again), the pod's answers: its answer counts", { daemonSet: status(401), daemonSetByPod: ds }, 'keep', /still runs a pod/],
  ["only the pod's token, refused: no node token to tell a forced delete from a removed account", { credential: 'pod', daemonSet: status(401) }, 'uninstall', /or this pod was deleted/],
  ['the DaemonSet forbidden (403), the account may still get pods', { daemonSet: status(403), mayGetPods: { status: 201, body: { status: { allowed: true } } } }, 'keep', /may still get pods/],
  ['the DaemonSet forbidden (403), the account may no longer get pods', { daemonSet: status(403), mayGetPods: { status: 201, body: { status: { allowed: false } } } }, 'uninstall', /may no longer get pods/],
  ['the DaemonSet forbidden (403), the review unanswered', { daemonSet: status(403), mayGetPods: { error: 'ECONNRESET' } }, 'keep', /could not be asked/],
  ['the node forbidden (403), the account may no longer get pods', { node: status(403), mayGetPods: { status: 201, body: {} } }, 'uninstall', /may not read node node-1/],
  ['the node is not registered (404)', { node: status(404) }, 'keep', /not registered/],
  ['no answer for the node', { node: { error: 'ECONNREFUSED' } }, 'keep', /did not answer for node/],
  ['no NODE_NAME: the DaemonSet exists', { nodeName: undefined, node: undefined }, 'keep', /without NODE_NAME/],
  ['the owner is unknown (no answer at start or now)', { owner: { unknown: 'no answer for this pod: ETIMEDOUT' } }, 'keep', /unknown/],
  ['the DaemonSet was not looked up', { daemonSet: undefined }, 'keep', /not looked up/],
];

describe('the stop decision table', () => {
  it.each(rows)('%s: %s', (_, change, kind, reason) => {
    const decision = decideStop({ ...base, ...change });
    expect(decision.kind).toBe(kind);
    expect(decision.reason).toMatch(reason);
  });

  it('asks for an access review after a 403, and only then', () => {
    expect(needsAccessReview({ ...base, daemonSet: status(403) })).toBe(true);
    expect(needsAccessReview({ ...base, node: status(403) })).toBe(true);
    expect(needsAccessReview({ ...base, daemonSet: status(401), daemonSetByPod: status(403) })).toBe(true);
    expect(needsAccessReview(base)).toBe(false);
    expect(needsAccessReview({ ...base, daemonSet: status(404) })).toBe(false);
  });
});
