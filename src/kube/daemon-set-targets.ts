// Whether a DaemonSet would run a pod on a Node, as the DaemonSet controller decides it
// (pkg/controller/daemon NodeShouldRunDaemonPod in Kubernetes 1.37): the template's nodeName, its
// nodeSelector and required node affinity (component-helpers' nodeaffinity), and its tolerations, with
// the ones the controller adds to every daemon pod, against the Node's NoSchedule and NoExecute
// taints. A stop asks it (docs/design.md, Stop): a DaemonSet that no longer targets this node will
// send no replacement, so the node must be uninstalled. Pure, no I/O.

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}
export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}
export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}
export interface PodTemplateSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  hostNetwork?: boolean;
  tolerations?: Toleration[];
  affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } };
}
export interface NodeFacts {
  name: string;
  labels: Record<string, string>;
  taints: Taint[];
}

/** What the controller adds to every daemon pod (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations). */
function daemonPodTolerations(spec: PodTemplateSpec): Toleration[] {
  const added: Toleration[] = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
  ];
  if (spec.hostNetwork === true) added.push({ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' });
  return [...(spec.tolerations ?? []), ...added];
}

/** A decimal int64 as Kubernetes parses it for Gt and Lt (strconv.ParseInt), or undefined. */
function integer(text: string): bigint | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= -(1n << 63n) && n < 1n << 63n ? n : undefined;
}

/** core/v1 Toleration.ToleratesTaint; Gt and Lt compare integers, as with TaintTolerationComparisonOperators on. */
function tolerates(t: Toleration, taint: Taint): boolean {
  if ((t.effect ?? '') !== '' && t.effect !== taint.effect) return false;
  if ((t.key ?? '') !== '' && t.key !== taint.key) return false;
  const operator = t.operator ?? '';
  if (operator === '' || operator === 'Equal') return (t.value ?? '') === (taint.value ?? '');
  if (operator === 'Exists') return true;
  if (operator === 'Gt' || operator === 'Lt') {
    const [want, have] = [integer(t.value ?? ''), integer(taint.value ?? '')];
    if (want === undefined || have === undefined) return false;
    return operator === 'Gt' ? have > want : have < want;
  }
  return false;
}

/** One requirement on the Node's labels (apimachinery labels.Requirement.Matches). */
function labelMatches(r: NodeSelectorRequirement, labels: Record<string, string>): boolean | undefined {
  const values = r.values ?? [];
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.operator) {
    case 'In':
      return has && values.includes(value!);
    case 'NotIn':
      return !has || !values.includes(value!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      // One integer value, or the term cannot be parsed and matches nothing.
      const bound = values.length === 1 ? integer(values[0]!) : undefined;
      if (bound === undefined) return undefined;
      const have = has ? integer(value!) : undefined;
      if (have === undefined) return false;
      return r.operator === 'Gt' ? have > bound : have < bound;
    }
    default:
      return undefined;
  }
}

/** One requirement on the Node's fields: only metadata.name, In or NotIn with exactly one value. */
function fieldMatches(r: NodeSelectorRequirement, nodeName: string): boolean | undefined {
  if (r.key !== 'metadata.name' || r.values?.length !== 1) return undefined;
  if (r.operator === 'In') return nodeName === r.values[0];
  if (r.operator === 'NotIn') return nodeName !== r.values[0];
  return undefined;
}

/** A term: every requirement holds; an empty term selects nothing; one that cannot be parsed neither. */
function termMatches(term: NodeSelectorTerm, node: NodeFacts): boolean {
  const labels = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (labels.length === 0 && fields.length === 0) return false;
  const results = [...labels.map((r) => labelMatches(r, node.labels)), ...fields.map((r) => fieldMatches(r, node.name))];
  return results.every((m) => m === true);
}

export type Targeting = { targets: true } | { targets: false; why: string };

/** Whether the DaemonSet whose pod template is `spec` would run a pod on `node`. */
export function daemonSetTargets(spec: PodTemplateSpec, node: NodeFacts): Targeting {
  if ((spec.nodeName ?? '') !== '' && spec.nodeName !== node.name) return { targets: false, why: `its pods are pinned to node ${spec.nodeName}` };
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (node.labels[key] !== value) return { targets: false, why: `its nodeSelector ${key}=${value} does not match this node` };
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required !== undefined && !(required.nodeSelectorTerms ?? []).some((term) => termMatches(term, node))) {
    return { targets: false, why: 'its required node affinity does not match this node' };
  }
  const tolerations = daemonPodTolerations(spec);
  const untolerated = node.taints.find((taint) => (taint.effect === 'NoSchedule' || taint.effect === 'NoExecute') && !tolerations.some((t) => tolerates(t, taint)));
  if (untolerated !== undefined) return { targets: false, why: `it does not tolerate the node's taint ${untolerated.key}${untolerated.value ? `=${untolerated.value}` : ''}:${untolerated.effect}` };
  return { targets: true };
}
