// What a stop asks the API server (docs/design.md, Stop), in order: the DaemonSet that runs this agent
// (learned from the pod at start: after a forced delete the pod is gone), with the node's token (it
// outlives the pod) or the pod's; when the node's is refused, the same with the pod's; this Node, to
// see whether the DaemonSet still targets it; after a 403, whether the account may still get pods.
// Each request is bounded by the client's timeout. The decision itself is stop-decision.ts, pure.
import type { ApiClient } from './api-client.js';
import type { Credential, DaemonSetObject, Lookup, NodeObject, StopFacts } from './stop-decision.js';
import { needsAccessReview } from './stop-decision.js';

interface OwnerReference {
  kind?: string;
  name?: string;
  controller?: boolean;
}
interface PodObject {
  metadata?: { ownerReferences?: OwnerReference[] };
}

export async function lookup<T>(client: ApiClient, apiPath: string, method = 'GET', body?: unknown): Promise<Lookup<T>> {
  try {
    return await client.send<T>(method, apiPath, body);
  } catch (err) {
    return { error: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
  }
}

/** The name of the DaemonSet that controls this pod, or why it is not known. */
export async function podOwner(client: ApiClient, namespace: string, podName: string): Promise<StopFacts['owner']> {
  const pod = await lookup<PodObject>(client, `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(podName)}`);
  if ('error' in pod) return { unknown: `no answer for this pod: ${pod.error}` };
  if (pod.status !== 200) return { unknown: `the API server answered ${pod.status} for this pod` };
  const owner = pod.body?.metadata?.ownerReferences?.find((o) => o.kind === 'DaemonSet' && o.controller === true);
  return owner?.name === undefined ? { unknown: 'this pod has no DaemonSet owner' } : { name: owner.name };
}

export interface StopClients {
  /** With the node-bound token, when the agent holds one. */
  node: ApiClient | undefined;
  /** With the pod's own token, when there is one. */
  pod: ApiClient | undefined;
}

export async function askStop(clients: StopClients, namespace: string, owner: StopFacts['owner'], nodeName: string | undefined): Promise<StopFacts> {
  const facts: StopFacts = { owner, nodeName };
  const first = clients.node ?? clients.pod;
  if ('unknown' in owner || first === undefined) return facts;
  const credential: Credential = clients.node !== undefined ? 'node' : 'pod';
  const dsPath = `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/daemonsets/${encodeURIComponent(owner.name)}`;
  facts.credential = credential;
  facts.daemonSet = await lookup<DaemonSetObject>(first, dsPath);
  let asking = first;
  if (credential === 'node' && clients.pod !== undefined && !('error' in facts.daemonSet) && facts.daemonSet.status === 401) {
    facts.daemonSetByPod = await lookup<DaemonSetObject>(clients.pod, dsPath);
    asking = clients.pod;
  }
  const ds = facts.daemonSetByPod ?? facts.daemonSet;
  if (nodeName !== undefined && !('error' in ds) && ds.status === 200 && ds.body?.metadata?.deletionTimestamp === undefined) {
    facts.node = await lookup<NodeObject>(asking, `/api/v1/nodes/${encodeURIComponent(nodeName)}`);
  }
  if (needsAccessReview(facts)) {
    const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb: 'get', resource: 'pods' } } };
    facts.mayGetPods = await lookup(asking, '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', 'POST', review);
  }
  return facts;
}
