// What a SIGTERM means (docs/design.md, Stop): an uninstall, or a replacement. Kubernetes sends the
// same signal for a rolling update, a rollback, a liveness restart, an eviction, a drain, a force
// delete and an uninstall; only the DaemonSet tells them apart. The node is uninstalled when the
// DaemonSet is gone, being deleted, or would no longer run a pod on this Node (its nodeSelector,
// required affinity or tolerations: the controller deletes the pod and sends no replacement), and
// when the service account is gone (the chained plugin uses it on every pod ADD). Anything else,
// including no answer, keeps the files: a chained config whose binary is present breaks nothing and
// the next agent reconciles it, while an unchained node starts pods outside the mesh
// (istio/istio#54180 decides it the same way). Pure: the answers in, the decision out.
import type { ApiAnswer } from './api-client.js';
import { daemonSetTargets, type NodeFacts, type PodTemplateSpec, type Taint } from './daemon-set-targets.js';

export interface DaemonSetObject {
  metadata?: { uid?: string; deletionTimestamp?: string };
  spec?: { template?: { spec?: PodTemplateSpec } };
}
export interface NodeObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { taints?: Taint[] };
}

/** An answer, or why there was none. */
export type Lookup<T> = ApiAnswer<T> | { error: string };

/** Which credential asked: the node-bound token (it outlives the pod), or the pod's own. */
export type Credential = 'node' | 'pod';

/** What the stop found out, in the order it asks (stop-facts.ts). */
export interface StopFacts {
  /** This pod's DaemonSet by name (learned from the pod at start, or at the stop), or why not. */
  owner: { name: string } | { unknown: string };
  /** The DaemonSet, asked with `credential`. */
  daemonSet?: Lookup<DaemonSetObject>;
  credential?: Credential;
  /** The DaemonSet asked again with the pod's token, when the node's was refused (401). */
  daemonSetByPod?: Lookup<DaemonSetObject>;
  /** This Node (NODE_NAME), once the DaemonSet is known to exist. */
  nodeName?: string;
  node?: Lookup<NodeObject>;
  /** After a 403: whether the account may still get pods, as the chained plugin must (a SelfSubjectAccessReview). */
  mayGetPods?: Lookup<{ status?: { allowed?: boolean } }>;
}

export type StopDecision = { kind: 'uninstall'; reason: string } | { kind: 'keep'; reason: string };

const keep = (reason: string): StopDecision => ({ kind: 'keep', reason: `${reason}: keeping the node chained` });
const uninstall = (reason: string): StopDecision => ({ kind: 'uninstall', reason });

/** After a 403, the question the stop asks next: may the account still do what the plugin does? */
export function needsAccessReview(facts: StopFacts): boolean {
  const answer = effectiveDaemonSet(facts);
  const status = (lookup: Lookup<unknown> | undefined) => (lookup === undefined || 'error' in lookup ? undefined : lookup.status);
  return status(answer) === 403 || status(facts.node) === 403;
}

/** The DaemonSet answer that counts: the pod's token's when the node's was refused and the pod's was not. */
function effectiveDaemonSet(facts: StopFacts): Lookup<DaemonSetObject> | undefined {
  const first = facts.daemonSet;
  if (first !== undefined && !('error' in first) && first.status === 401 && facts.daemonSetByPod !== undefined) return facts.daemonSetByPod;
  return first;
}

/** The answers in one line for the log: each status (or why there was none), and who asked. */
export function summarize(facts: StopFacts): Record<string, string> {
  const said = (lookup: Lookup<unknown> | undefined) => (lookup === undefined ? undefined : 'error' in lookup ? lookup.error : String(lookup.status));
  const out: Record<string, string> = { owner: 'name' in facts.owner ? facts.owner.name : `unknown: ${facts.owner.unknown}` };
  const entries: Array<[string, string | undefined]> = [
    ['credential', facts.credential],
    ['daemonSet', said(facts.daemonSet)],
    ['daemonSetByPod', said(facts.daemonSetByPod)],
    ['node', said(facts.node)],
    ['mayGetPods', said(facts.mayGetPods)],
  ];
  for (const [key, value] of entries) if (value !== undefined) out[key] = value;
  return out;
}

/** The decision table, row by row (docs/design.md, Stop). */
export function decideStop(facts: StopFacts): StopDecision {
  if ('unknown' in facts.owner) return keep(`the DaemonSet that runs this agent is unknown (${facts.owner.unknown})`);
  const name = facts.owner.name;
  const ds = effectiveDaemonSet(facts);
  if (ds === undefined) return keep(`DaemonSet ${name} was not looked up`);
  if ('error' in ds) return keep(`the API server did not answer for DaemonSet ${name} (${ds.error})`);
  if (ds.status === 401) {
    // Refused, not forbidden: the token is not valid. A node-bound token dies only with the Node or
    // the account, and the pod's own (asked next) with the pod or the account: both refused means the
    // account is gone, and the kubeconfig the plugin reads carries that account's token.
    const refused = facts.credential === 'node' ? "the API server refuses this node's token and this pod's (401): the service account is gone" : 'the API server refuses this pod\'s token (401) and the node has no token of its own: the service account is gone, or this pod was deleted';
    return uninstall(`${refused}, and the chained plugin, which uses that account, would fail every pod ADD`);
  }
  if (ds.status === 403) return accessDecision(facts, `the account may not read DaemonSet ${name} (403)`);
  if (ds.status === 404) return uninstall(`DaemonSet ${name} is gone`);
  if (ds.status !== 200) return keep(`the API server answered ${ds.status} for DaemonSet ${name}`);
  if (ds.body?.metadata?.deletionTimestamp !== undefined) return uninstall(`DaemonSet ${name} is being deleted`);
  if (facts.nodeName === undefined) return keep(`DaemonSet ${name} exists, and without NODE_NAME whether it still targets this node cannot be asked`);
  const node = facts.node;
  if (node === undefined) return keep(`node ${facts.nodeName} was not looked up`);
  if ('error' in node) return keep(`the API server did not answer for node ${facts.nodeName} (${node.error})`);
  if (node.status === 403) return accessDecision(facts, `the account may not read node ${facts.nodeName} (403)`);
  // Deleted while its kubelet runs: the kubelet registers it again, and the DaemonSet follows.
  if (node.status === 404) return keep(`DaemonSet ${name} exists and node ${facts.nodeName} is not registered (the kubelet registers it again)`);
  if (node.status !== 200) return keep(`the API server answered ${node.status} for node ${facts.nodeName}`);
  const nodeFacts: NodeFacts = { name: facts.nodeName, labels: node.body?.metadata?.labels ?? {}, taints: node.body?.spec?.taints ?? [] };
  const targeting = daemonSetTargets(ds.body?.spec?.template?.spec ?? {}, nodeFacts);
  if (!targeting.targets) return uninstall(`DaemonSet ${name} no longer runs a pod on node ${facts.nodeName}: ${targeting.why}`);
  return keep(`DaemonSet ${name} still runs a pod on this node (a restart, rollout, rollback, eviction, drain or forced delete)`);
}

/** A 403 somewhere: the node is kept only while the plugin could still do its work (get pods). */
function accessDecision(facts: StopFacts, what: string): StopDecision {
  const review = facts.mayGetPods;
  if (review === undefined || 'error' in review || review.status !== 201) return keep(`${what}, and whether it may still get pods could not be asked`);
  if (review.body?.status?.allowed === true) return keep(`${what}, but it may still get pods, as the chained plugin does`);
  return uninstall(`${what}, and it may no longer get pods: the chained plugin, which uses that account, would fail every pod ADD (its RBAC removed?)`);
}
