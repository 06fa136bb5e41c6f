// The Helm chart (charts/cni-chainer) with the real Helm 4: lint, its schema, a drop-in for linkerd2-cni
// (its values files install unchanged, its cni_network_config rendered the same, field for field:
// test/fixtures/linkerd2-cni holds what linkerd's own chart renders for them), the grants it renders
// only where they are narrowed or used, and deploy/base rendered from it without drift. Installs,
// upgrades from a linkerd2-cni release and rollbacks run on the real cluster (test/cluster).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/addon-path.js';
import { CHART, helm, template, WITH_POLICIES } from '../helpers/helm.js';
import { parseYaml, type K8sObject } from '../helpers/kustomize.js';

const FIXTURES = path.join(repoRoot, 'test', 'fixtures', 'linkerd2-cni');
const valuesFile = (name: string) => path.join(FIXTURES, `values-${name}.yaml`);
/** linkerd2-cni's values files, and what linkerd's chart renders into its ConfigMap for each. */
const CASES = readdirSync(FIXTURES)
  .filter((f) => f.startsWith('rendered-'))
  .map((f) => f.slice('rendered-'.length, -'.json'.length));

const find = (objects: K8sObject[], kind: string, name?: string) => objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const daemonSetOf = (objects: K8sObject[]) => find(objects, 'DaemonSet')!;
const rulesOf = (objects: K8sObject[]) => find(objects, 'ClusterRole', 'linkerd-cni')!.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
const allows = (objects: K8sObject[], group: string, resource: string, verb: string) => rulesOf(objects).some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
const casesArgs = (name: string) => (name === 'default' ? [] : ['-f', valuesFile(name)]);

describe('charts/cni-chainer', () => {
  it('passes helm lint, with its defaults and with each of linkerd2-cni\'s values files', () => {
    for (const name of CASES) {
      const lint = helm(['lint', CHART, ...casesArgs(name)]);
      expect(lint.status, `${name}: ${lint.stdout}${lint.stderr}`).toBe(0);
      expect(lint.stdout).toContain('0 chart(s) failed');
    }
  });

  it.each(CASES)("renders linkerd2-cni's ConfigMap for its values (%s): the plugin's JSON field for field, in the same order", (name) => {
    const expected = JSON.parse(readFileSync(path.join(FIXTURES, `rendered-${name}.json`), 'utf8')) as { cni_network_config: Record<string, unknown> } & Record<string, unknown>;
    const data = find(template([...casesArgs(name), ...WITH_POLICIES]), 'ConfigMap', 'linkerd-cni-config')!.data as Record<string, string>;
    const rendered = { ...data, cni_network_config: JSON.parse(data.cni_network_config!) as Record<string, unknown> };
    expect(rendered).toEqual(expected);
    // Key order too: JSON.stringify walks keys in insertion order.
    expect(JSON.stringify(rendered.cni_network_config)).toBe(JSON.stringify(expected.cni_network_config));
  });

  it('refuses wrong types and unknown keys, naming the value', () => {
    const refused = (args: string[]) => {
      const result = helm(['template', 'x', CHART, ...args]);
      expect(result.status).not.toBe(0);
      return result.stderr;
    };
    expect(refused(['--set', 'inboundProxyPort=http'])).toMatch(/at '\/inboundProxyPort'/);
    expect(refused(['--set', 'iptablesMode=ebpf'])).toMatch(/at '\/iptablesMode'.*value must be one of/s);
    expect(refused(['--set', 'disableIPv6=maybe'])).toMatch(/at '\/disableIPv6': got string, want boolean/);
    expect(refused(['--set', 'ignoreInboundPorts=25;rm'])).toMatch(/at '\/ignoreInboundPorts'/);
    expect(refused(['--set', 'portsToRedirect=80]'])).toMatch(/at '\/portsToRedirect'/);
    expect(refused(['--set', 'agent.patchMode=sideways'])).toMatch(/at '\/agent\/patchMode'/);
    expect(refused(['--set', 'inboundProxyPorts=4143'])).toMatch(/additional properties 'inboundProxyPorts' not allowed/);
    expect(refused(['--set', 'repairController.enable=true'])).toMatch(/additional properties 'enable' not allowed/);
    // linkerd2-cni's templates take a port as a string of digits too.
    expect(() => template(['--set-string', 'inboundProxyPort=4143'])).not.toThrow();
  });

  it('renders the node-gating grant, the token grant and the policies only where the API server serves ValidatingAdmissionPolicy', () => {
    const without = template();
    expect(find(without, 'ValidatingAdmissionPolicy')).toBeUndefined();
    expect(allows(without, '', 'nodes', 'patch')).toBe(false);
    expect(find(without, 'Role', 'linkerd-cni-node-token')).toBeUndefined();
    const withPolicies = template(WITH_POLICIES);
    expect(allows(withPolicies, '', 'nodes', 'patch')).toBe(true);
    expect(withPolicies.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name).sort()).toEqual(['linkerd-cni-node-events', 'linkerd-cni-node-taint', 'linkerd-cni-node-token']);
    // Node gating off: no patch of nodes, no node-taint policy, the rest stays.
    const ungated = template([...WITH_POLICIES, '--set', 'nodeGating.enabled=false']);
    expect(allows(ungated, '', 'nodes', 'patch')).toBe(false);
    expect(find(ungated, 'ValidatingAdmissionPolicy', 'linkerd-cni-node-taint')).toBeUndefined();
    expect(find(ungated, 'ValidatingAdmissionPolicy', 'linkerd-cni-node-token')).toBeDefined();
  });

  it("grants the repair controller's rights with the repair controller only, and runs it as linkerd's chart does", () => {
    const off = template(WITH_POLICIES);
    expect(allows(off, '', 'pods', 'delete')).toBe(false);
    expect(allows(off, 'events.k8s.io', 'events', 'create')).toBe(false);
    const on = template(['-f', valuesFile('repair'), ...WITH_POLICIES]);
    expect(allows(on, '', 'pods', 'delete')).toBe(true);
    expect(allows(on, 'events.k8s.io', 'events', 'create')).toBe(true);
    const repair = daemonSetOf(on).spec.template.spec.containers.find((c: { name: string }) => c.name === 'repair-controller');
    expect(repair.command).toEqual(['/usr/lib/linkerd/linkerd-cni-repair-controller']);
    expect(repair.args).toEqual(['--admin-addr', '0.0.0.0:9990', '--log-format', 'plain', '--log-level', 'info']);
    expect(repair.securityContext.readOnlyRootFilesystem).toBe(true);
  });

  it("takes every value of a fully configured linkerd2-cni values file where linkerd's chart puts it", () => {
    const objects = template(['-f', valuesFile('configured'), ...WITH_POLICIES]);
    const ds = daemonSetOf(objects);
    const pod = ds.spec.template.spec;
    const agent = pod.containers[0];
    expect(ds.metadata.labels?.owner).toBe('platform'); // commonLabels, on every object
    for (const o of objects) expect(o.metadata.labels?.owner, `${o.kind} ${o.metadata.name}`).toBe('platform');
    expect(ds.spec.template.metadata.labels.team).toBe('mesh'); // podLabels
    expect(ds.spec.revisionHistoryLimit).toBe(3);
    expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } });
    expect(pod.priorityClassName).toBe('system-node-critical');
    expect(pod.tolerations).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'mesh', effect: 'NoSchedule' }]);
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]).toEqual({ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64', 'arm64'] });
    expect(agent.image).toBe('registry.example/mesh/cni:v9.9.9');
    expect(agent.imagePullPolicy).toBe('Always');
    expect(find(objects, 'ServiceAccount')!.imagePullSecrets).toEqual([{ name: 'registry-login' }]);
    expect(pod.initContainers.map((c: { name: string }) => c.name)).toEqual(['wait-for-primary']);
    expect(agent.resources).toEqual({ limits: { memory: '200Mi', 'ephemeral-storage': '100Mi' }, requests: { cpu: '20m', memory: '80Mi', 'ephemeral-storage': '10Mi' } });
    expect(agent.env.find((e: { name: string }) => e.name === 'LOG_LEVEL').value).toBe('debug');
    expect(find(objects, 'ResourceQuota')!.spec.scopeSelector.matchExpressions[0].values).toEqual(['system-node-critical']);
  });

  it('mounts custom directories, and one directory once when both are the same', () => {
    const k3s = daemonSetOf(template(['-f', valuesFile('k3s-dirs')])).spec.template.spec;
    expect(k3s.containers[0].volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(['/host/var/lib/rancher/k3s/agent/etc/cni/net.d', '/host/var/lib/rancher/k3s/data/current/bin']);
    expect(k3s.volumes.map((v: { hostPath: { path: string } }) => v.hostPath.path)).toEqual(['/var/lib/rancher/k3s/agent/etc/cni/net.d', '/var/lib/rancher/k3s/data/current/bin']);
    const one = daemonSetOf(template(['-f', valuesFile('one-dir')])).spec.template.spec;
    expect(one.containers[0].volumeMounts.map((m: { mountPath: string }) => m.mountPath)).toEqual(['/host/var/lib/cni']);
    expect(one.volumes).toHaveLength(1);
  });

  it('off the host network, probes the pod address and binds the probes beyond loopback; privileged when asked', () => {
    const pod = daemonSetOf(template(['--set', 'agent.hostNetwork=false', '--set', 'privileged=true'])).spec.template.spec;
    expect(pod.hostNetwork).toBeUndefined();
    const agent = pod.containers[0];
    expect(agent.env.find((e: { name: string }) => e.name === 'HEALTH_BIND').value).toBe('::');
    expect(agent.readinessProbe.httpGet.host).toBeUndefined();
    expect(agent.securityContext).toEqual({ privileged: true });
  });

  it('accepts enablePSP and renders no PodSecurityPolicy (removed in Kubernetes 1.25); its notes say so', () => {
    const objects = template(['--set', 'enablePSP=true']);
    expect(objects.map((o) => o.kind)).not.toContain('PodSecurityPolicy');
    // A client-side dry run knows no API server: no ValidatingAdmissionPolicy, so node gating is off
    // and the notes say why (the real cluster's install says how to register nodes: test/cluster).
    const install = helm(['install', 'linkerd2-cni', CHART, '--namespace', 'linkerd-cni', '--dry-run=client', '--set', 'enablePSP=true']);
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toMatch(/enablePSP is ignored: PodSecurityPolicy was removed/);
    expect(install.stdout).toMatch(/Node gating is OFF: this API server does not serve admissionregistration.k8s.io\/v1\s+ValidatingAdmissionPolicy/);
  });

  it('is what deploy/base carries: scripts/render-deploy.sh has been run since the chart last changed', () => {
    const rendered = parseYaml(readFileSync(path.join(repoRoot, 'deploy', 'base', 'cni-chainer.yaml'), 'utf8'));
    const now = template(['--kube-version', '1.31.0', ...WITH_POLICIES, '--set', 'renderNamespace=true']);
    expect(rendered).toEqual(now);
  });
});
