// What a SIGTERM means (docs/design.md, Stop): an uninstall, or a replacement. Kubernetes sends the
// same signal for a rolling update, a rollback, a liveness restart, an eviction, a drain and an
// uninstall; only the DaemonSet that owns the pod tells them apart. Gone, or being deleted: an
// uninstall, and the node is unchained. Anything else, including no answer: the files stay, since a
// chained config whose binary is present breaks nothing and the next agent reconciles it, while an
// unchained node starts pods outside the mesh (istio/istio#54180 decides it the same way).
import type { ApiAnswer, ApiClient } from './api-client.js';

/** The parts of a Pod and a DaemonSet the decision reads. */
export interface OwnerReference {
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}
export interface PodObject {
  metadata?: { ownerReferences?: OwnerReference[] };
}
export interface DaemonSetObject {
  metadata?: { uid?: string; deletionTimestamp?: string };
}

export type StopDecision = { kind: 'uninstall'; reason: string } | { kind: 'keep'; reason: string };

/** An answer, or why there was none. */
export type Lookup<T> = ApiAnswer<T> | { error: string };

/** The DaemonSet that controls the pod, as its ownerReferences name it. */
function daemonSetOwner(pod: PodObject | undefined): OwnerReference | undefined {
  return pod?.metadata?.ownerReferences?.find((o) => o.kind === 'DaemonSet' && o.controller === true);
}

/** The decision table, pure: the pod's answer, then (if it names one) its DaemonSet's. */
export function decideStop(pod: Lookup<PodObject>, daemonSet: Lookup<DaemonSetObject> | undefined): StopDecision {
  if ('error' in pod) return { kind: 'keep', reason: `the API server did not answer for this pod (${pod.error}): keeping the node chained` };
  // This pod's service account may no longer read pods: `kubectl delete -k` removes the account
  // (401) and its ClusterRoleBinding (403) before the DaemonSet. The chained plugin reads pods with
  // the same account (the kubeconfig carries its token), so a node left chained would now fail every
  // pod ADD: unchaining it is the safe side, whatever removed the access.
  if (pod.status === 401 || pod.status === 403) {
    return { kind: 'uninstall', reason: `the API server answered ${pod.status} for this pod: its service account, which the chained plugin uses too, may no longer read pods (removed with deploy/?)` };
  }
  if (pod.status !== 200) return { kind: 'keep', reason: `the API server answered ${pod.status} for this pod: keeping the node chained` };
  const owner = daemonSetOwner(pod.body);
  if (owner?.name === undefined) return { kind: 'keep', reason: 'this pod has no DaemonSet owner: keeping the node chained (cni-chainer uninstall removes it)' };
  if (daemonSet === undefined) return { kind: 'keep', reason: `DaemonSet ${owner.name} was not looked up: keeping the node chained` };
  if ('error' in daemonSet) return { kind: 'keep', reason: `the API server did not answer for DaemonSet ${owner.name} (${daemonSet.error}): keeping the node chained` };
  if (daemonSet.status === 404) return { kind: 'uninstall', reason: `DaemonSet ${owner.name} is gone` };
  if (daemonSet.status !== 200) return { kind: 'keep', reason: `the API server answered ${daemonSet.status} for DaemonSet ${owner.name}: keeping the node chained` };
  const meta = daemonSet.body?.metadata;
  // Deleted and created again under the same name: the new one runs the next agent here.
  if (owner.uid !== undefined && meta?.uid !== undefined && meta.uid !== owner.uid) return { kind: 'keep', reason: `DaemonSet ${owner.name} was replaced by a new one: keeping the node chained for its agent` };
  if (meta?.deletionTimestamp !== undefined) return { kind: 'uninstall', reason: `DaemonSet ${owner.name} is being deleted` };
  return { kind: 'keep', reason: `DaemonSet ${owner.name} still exists (a restart, rollout, rollback, eviction or drain): keeping the node chained` };
}

async function lookup<T>(client: ApiClient, apiPath: string): Promise<Lookup<T>> {
  try {
    return await client.get<T>(apiPath);
  } catch (err) {
    return { error: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
  }
}

/** Reads this pod and its DaemonSet: two GETs, each bounded by the client's timeout. */
export async function askStop(client: ApiClient, namespace: string, podName: string): Promise<StopDecision> {
  const ns = encodeURIComponent(namespace);
  const pod = await lookup<PodObject>(client, `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(podName)}`);
  const owner = 'error' in pod ? undefined : daemonSetOwner(pod.body);
  const daemonSet = owner?.name === undefined ? undefined : await lookup<DaemonSetObject>(client, `/apis/apps/v1/namespaces/${ns}/daemonsets/${encodeURIComponent(owner.name)}`);
  return decideStop(pod, daemonSet);
}
