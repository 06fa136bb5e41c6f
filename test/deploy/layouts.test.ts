// Every layout a kustomize user can apply (deploy/base, rendered from the chart, and each overlay):
// built by kustomize, every object validated against the Kubernetes OpenAPI schema (kubernetes-models),
// the DaemonSet's environment against the agent's own zod schema, and the bindings that hold the
// agent's account (RBAC subjects, the policies' username, the Events grant) checked to name the
// namespace it runs in. The real API server applies them in test/cluster.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_NAMES, loadConfig } from '../../src/config.js';
import { repoRoot } from '../helpers/addon-path.js';
import { build, type K8sObject } from '../helpers/kustomize.js';

const layouts = ['base', ...readdirSync(path.join(repoRoot, 'deploy', 'overlays')).map((o) => `overlays/${o}`)];
// Variables the image's runtime reads rather than the agent (allowed besides the agent's own).
const RUNTIME_ENV = ['MALLOC_ARENA_MAX'];
// Events about Nodes live in `default`, whatever the agent's namespace.
const EVENTS_GRANT = 'linkerd-cni-node-events';

async function validateSchema(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  const modulePath = `kubernetes-models/${group === undefined ? '' : `${group}/`}${version}/${object.kind}`;
  const model = (await import(modulePath)) as Record<string, new (data: unknown) => { validate(): void }>;
  new model[object.kind]!(object).validate();
}

type EnvVar = { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } };
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

describe.each(layouts)('deploy/%s', (layout) => {
  const objects = build(layout);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;
  const only = (kind: string) => {
    const found = objects.filter((o) => o.kind === kind);
    expect(found, kind).toHaveLength(1);
    return found[0]!;
  };
  const daemonSet = only('DaemonSet');
  const pod = daemonSet.spec.template.spec;
  const container = pod.containers[0];
  const env = container.env as EnvVar[];
  const configMap = named('ConfigMap', 'linkerd-cni-config');
  // The downward API's values, as the kubelet fills them in.
  const downward: Record<string, string> = { 'metadata.name': 'linkerd-cni-x7k2p', 'metadata.namespace': daemonSet.metadata.namespace!, 'spec.nodeName': 'node-1' };
  const resolved: Record<string, string> = Object.fromEntries(env.map((e) => [e.name, e.value ?? (e.valueFrom!.fieldRef === undefined ? configMap.data[e.valueFrom!.configMapKeyRef!.key] : downward[e.valueFrom!.fieldRef.fieldPath])]));
  const namespace = only('ServiceAccount').metadata.namespace!;

  it('builds the namespace, account, RBAC, policies, config map and DaemonSet, each valid against the OpenAPI schema', async () => {
    expect([...new Set(objects.map((o) => o.kind))].sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'DaemonSet', 'Namespace', 'ResourceQuota', 'Role', 'RoleBinding', 'ServiceAccount', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    for (const object of objects) await validateSchema(object);
    // The validator is strict enough to matter: a wrong type is refused.
    const broken = structuredClone(daemonSet);
    broken.spec.template.spec.containers[0].readinessProbe.periodSeconds = 'often';
    await expect(validateSchema(broken)).rejects.toThrow(/periodSeconds/);
  });

  it('sets only variables the agent knows, with values its schema accepts (DEST_* from the ConfigMap, as linkerd2-cni does)', () => {
    for (const { name } of env) expect([...ENV_NAMES, ...RUNTIME_ENV], name).toContain(name);
    expect(env.find((e) => e.name === 'DEST_CNI_NET_DIR')?.valueFrom?.configMapKeyRef).toEqual({ name: 'linkerd-cni-config', key: 'dest_cni_net_dir' });
    const config = loadConfig(resolved);
    expect(config.plugin?.type).toBe('linkerd-cni');
    expect(config.healthPort).toBe(Number(resolved.HEALTH_PORT));
    expect(config.pod).toEqual({ name: 'linkerd-cni-x7k2p', namespace });
    expect(config.nodeName).toBe('node-1');
    expect(config.mode).toBe(layout === 'overlays/owned' ? 'owned' : 'in-place');
  });

  it('mounts the host dirs where CONTAINER_MOUNT_PREFIX + DEST_* say', () => {
    const mounts = Object.fromEntries(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
    const hostPaths = Object.fromEntries(pod.volumes.map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]));
    for (const dest of ['DEST_CNI_NET_DIR', 'DEST_CNI_BIN_DIR']) {
      const volume = Object.keys(hostPaths).find((n) => hostPaths[n] === resolved[dest])!;
      expect(volume, dest).toBeDefined();
      expect(mounts[volume]).toBe(`${resolved.CONTAINER_MOUNT_PREFIX}${resolved[dest]}`);
    }
  });

  it("is linkerd2-cni's DaemonSet: its name, selector and ConfigMap, so a helm upgrade replaces it in place", () => {
    expect(daemonSet.metadata.name).toBe('linkerd-cni');
    expect(daemonSet.spec.selector).toEqual({ matchLabels: { 'k8s-app': 'linkerd-cni' } });
    expect(daemonSet.spec.template.metadata.labels['k8s-app']).toBe('linkerd-cni');
    expect(pod.serviceAccountName).toBe('linkerd-cni');
    expect(Object.keys(configMap.data).sort()).toEqual(['cni_network_config', 'dest_cni_bin_dir', 'dest_cni_net_dir']);
    expect(container.image).toMatch(/^cni-chainer:\d+\.\d+\.\d+-cni-plugin-v\d+\.\d+\.\d+$/);
  });

  it('runs on the host network with loopback probes on HEALTH_PORT, a surge, and a grace period above the cleanup deadline', () => {
    expect(pod.hostNetwork).toBe(true);
    // A declared port would be a hostPort, and the surge pod would never be scheduled beside the old one.
    expect(container.ports).toBeUndefined();
    expect(resolved.HEALTH_BIND).toBe('127.0.0.1');
    expect(container.readinessProbe.httpGet).toEqual({ host: '127.0.0.1', path: '/readyz', port: Number(resolved.HEALTH_PORT) });
    expect(container.livenessProbe.httpGet).toEqual({ host: '127.0.0.1', path: '/healthz', port: Number(resolved.HEALTH_PORT) });
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.priorityClassName).toBe('system-node-critical');
    expect(daemonSet.spec.updateStrategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(resolved.SHUTDOWN_TIMEOUT_S));
  });

  it('is not privileged: seccomp RuntimeDefault, only the file capabilities, measured resources', () => {
    expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(container.securityContext.privileged).toBeUndefined();
    expect(container.securityContext.allowPrivilegeEscalation).toBe(false);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(container.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER'] });
    expect(container.resources.requests.memory).toBe('64Mi'); // test/image: the pod's working set
    expect(container.resources.limits.memory).toBe('160Mi');
    expect(container.resources.limits.cpu).toBeUndefined();
  });

  it('ships the ResourceQuota that lets its priority class run outside kube-system (GKE)', () => {
    const quota = only('ResourceQuota');
    expect(quota.metadata.namespace).toBe(namespace);
    const scopes = quota.spec.scopeSelector.matchExpressions as Array<{ operator: string; scopeName: string; values: string[] }>;
    expect(scopes).toContainEqual({ operator: 'In', scopeName: 'PriorityClass', values: [pod.priorityClassName] });
    expect(Number(quota.spec.hard.pods)).toBeGreaterThanOrEqual(5000); // a node per pod, the largest clusters
  });

  it('binds every grant and policy to the account in the namespace it runs in, and Events in default only', () => {
    const ns = only('Namespace');
    expect(ns.metadata.name).toBe(namespace);
    expect(ns.metadata.labels!['pod-security.kubernetes.io/enforce']).toBe('privileged');
    for (const o of objects) {
      if (['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].includes(o.kind)) continue;
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(o.metadata.name === EVENTS_GRANT ? 'default' : namespace);
    }
    for (const binding of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
      expect(binding.subjects, binding.metadata.name).toEqual([{ kind: 'ServiceAccount', name: 'linkerd-cni', namespace }]);
      const role = named(binding.roleRef.kind, binding.roleRef.name);
      expect(role, binding.roleRef.name).toBeDefined();
      if (binding.kind === 'RoleBinding') expect(role.metadata.namespace).toBe(binding.metadata.namespace);
    }
    for (const policy of objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy')) {
      expect(policy.spec.matchConditions[0].expression, policy.metadata.name).toBe(`request.userInfo.username == 'system:serviceaccount:${namespace}:linkerd-cni'`);
      expect(policy.spec.failurePolicy).toBe('Fail');
      for (const validation of policy.spec.validations as Array<{ reason: string; messageExpression: string }>) {
        expect(validation.reason).toBe('Forbidden');
        expect(validation.messageExpression).toBeDefined();
      }
      expect(named('ValidatingAdmissionPolicyBinding', policy.metadata.name).spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    }
  });

  it('grants what the agent and linkerd-cni use, and no repair controller rights without the repair controller', () => {
    const rules = named('ClusterRole', 'linkerd-cni').rules as Rule[];
    const allows = (group: string, resource: string, verb: string) => rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
    for (const resource of ['pods', 'nodes', 'namespaces', 'services']) for (const verb of ['get', 'list', 'watch']) expect(allows('', resource, verb), `${verb} ${resource}`).toBe(true);
    expect(allows('', 'nodes', 'patch')).toBe(true); // node gating, narrowed by the node-taint policy
    expect(allows('', 'pods', 'delete')).toBe(false);
    expect(allows('events.k8s.io', 'events', 'create')).toBe(false);
    expect(rules).toHaveLength(2);
    expect(named('Role', EVENTS_GRANT).rules).toEqual([{ apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }]);
    expect(named('Role', 'linkerd-cni-stop').rules).toEqual([{ apiGroups: ['apps'], resources: ['daemonsets'], resourceNames: ['linkerd-cni'], verbs: ['get'] }]);
    expect(named('Role', 'linkerd-cni-node-token').rules).toEqual([{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: ['linkerd-cni'], verbs: ['create'] }]);
  });

  it("lets the agent remove exactly the DaemonSet's NODE_TAINT_KEY", () => {
    const policy = named('ValidatingAdmissionPolicy', 'linkerd-cni-node-taint');
    expect((policy.spec.variables as Array<{ name: string; expression: string }>).find((v) => v.name === 'taintKey')?.expression).toBe(`'${resolved.NODE_TAINT_KEY}'`);
  });
});
