// Whether a DaemonSet would run a pod on a Node (src/kube/daemon-set-targets.ts), row by row against
// the DaemonSet controller's rules in Kubernetes 1.37 (NodeShouldRunDaemonPod: nodeName, nodeSelector,
// required node affinity, tolerations with the defaults every daemon pod gets).
import { describe, expect, it } from 'vitest';
import { daemonSetTargets, type NodeFacts, type NodeSelectorTerm, type PodTemplateSpec } from '../../src/kube/daemon-set-targets.js';

const node: NodeFacts = { name: 'node-1', labels: { 'kubernetes.io/os': 'linux', pool: 'a', size: '8' }, taints: [] };
const withTaints = (...taints: NodeFacts['taints']): NodeFacts => ({ ...node, taints });
const affinity = (...terms: NodeSelectorTerm[]): PodTemplateSpec => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
});

describe('a DaemonSet targets a node', () => {
  it.each<[string, PodTemplateSpec, NodeFacts, boolean]>([
    ['no constraints', {}, node, true],
    ['nodeSelector matching', { nodeSelector: { 'kubernetes.io/os': 'linux' } }, node, true],
    ['nodeSelector with another value', { nodeSelector: { 'kubernetes.io/os': 'windows' } }, node, false],
    ['nodeSelector on a label the node lacks', { nodeSelector: { gpu: 'true' } }, node, false],
    ['nodeSelector on an inherited property name', { nodeSelector: { constructor: 'x' } }, node, false],
    ['pinned to this node', { nodeName: 'node-1' }, node, true],
    ['pinned to another node', { nodeName: 'node-2' }, node, false],
    ['affinity In', affinity({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['a', 'b'] }] }), node, true],
    ['affinity In, other values', affinity({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['b'] }] }), node, false],
    ['affinity NotIn', affinity({ matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['a'] }] }), node, false],
    ['affinity NotIn on a missing label', affinity({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] }), node, true],
    ['affinity Exists', affinity({ matchExpressions: [{ key: 'pool', operator: 'Exists' }] }), node, true],
    ['affinity DoesNotExist', affinity({ matchExpressions: [{ key: 'pool', operator: 'DoesNotExist' }] }), node, false],
    ['affinity Gt', affinity({ matchExpressions: [{ key: 'size', operator: 'Gt', values: ['4'] }] }), node, true],
    ['affinity Lt', affinity({ matchExpressions: [{ key: 'size', operator: 'Lt', values: ['4'] }] }), node, false],
    ['affinity Gt with two values: cannot be parsed, matches nothing', affinity({ matchExpressions: [{ key: 'size', operator: 'Gt', values: ['4', '5'] }] }), node, false],
    ['affinity with an unknown operator', affinity({ matchExpressions: [{ key: 'pool', operator: 'Near', values: ['a'] }] }), node, false],
    ['affinity: terms are ORed', affinity({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['b'] }] }, { matchExpressions: [{ key: 'pool', operator: 'In', values: ['a'] }] }), node, true],
    ['affinity: requirements of a term are ANDed', affinity({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['a'] }, { key: 'size', operator: 'In', values: ['9'] }] }), node, false],
    ['affinity: an empty term selects nothing', affinity({}), node, false],
    ['affinity: no terms at all selects nothing', affinity(), node, false],
    ['affinity matchFields on the name', affinity({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }), node, true],
    ['affinity matchFields on another name', affinity({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-2'] }] }), node, false],
    ['affinity matchFields NotIn another name', affinity({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-2'] }] }), node, true],
    ['affinity matchFields on another field', affinity({ matchFields: [{ key: 'spec.podCIDR', operator: 'In', values: ['x'] }] }), node, false],
    ['a NoSchedule taint, not tolerated', {}, withTaints({ key: 'dedicated', value: 'db', effect: 'NoSchedule' }), false],
    ['a NoExecute taint, not tolerated', {}, withTaints({ key: 'dedicated', effect: 'NoExecute' }), false],
    ['a PreferNoSchedule taint does not count', {}, withTaints({ key: 'dedicated', effect: 'PreferNoSchedule' }), true],
    ['tolerated with operator Exists and no key', { tolerations: [{ operator: 'Exists' }] }, withTaints({ key: 'dedicated', value: 'db', effect: 'NoExecute' }), true],
    ['tolerated by key and value (Equal)', { tolerations: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] }, withTaints({ key: 'dedicated', value: 'db', effect: 'NoSchedule' }), true],
    ['a toleration with another value', { tolerations: [{ key: 'dedicated', value: 'web' }] }, withTaints({ key: 'dedicated', value: 'db', effect: 'NoSchedule' }), false],
    ['a toleration for another effect', { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }] }, withTaints({ key: 'dedicated', effect: 'NoExecute' }), false],
    ['a toleration with no effect tolerates every effect', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }, withTaints({ key: 'dedicated', effect: 'NoExecute' }), true],
    ['a cordoned node: every daemon pod tolerates unschedulable', {}, withTaints({ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }), true],
    ['a node not ready: tolerated by default', {}, withTaints({ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' }), true],
    ['network-unavailable: tolerated on the host network only', { hostNetwork: true }, withTaints({ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' }), true],
    ['network-unavailable on the pod network', {}, withTaints({ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' }), false],
    ['toleration Gt', { tolerations: [{ key: 'level', operator: 'Gt', value: '3' }] }, withTaints({ key: 'level', value: '5', effect: 'NoSchedule' }), true],
    ['toleration Lt', { tolerations: [{ key: 'level', operator: 'Lt', value: '3' }] }, withTaints({ key: 'level', value: '5', effect: 'NoSchedule' }), false],
  ])('%s', (_, spec, facts, targets) => {
    expect(daemonSetTargets(spec, facts).targets).toBe(targets);
  });

  it('says why when it does not', () => {
    expect(daemonSetTargets({ nodeSelector: { pool: 'b' } }, node)).toEqual({ targets: false, why: 'its nodeSelector pool=b does not match this node' });
    expect(daemonSetTargets({}, withTaints({ key: 'dedicated', value: 'db', effect: 'NoExecute' }))).toEqual({ targets: false, why: "it does not tolerate the node's taint dedicated=db:NoExecute" });
  });
});
