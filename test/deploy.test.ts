// The container image and the DaemonSet manifest, checked without a Docker engine or a cluster.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_NAMES, loadConfig } from '../src/config.js';
import { repoRoot } from './helpers/addon-path.js';
import { fixture } from './helpers/fixtures.js';
import { NodeHost } from './helpers/node-host.js';
import { waitFor } from './helpers/wait.js';
import { build, kustomize, type K8sObject } from './helpers/kustomize.js';

const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');

/** Instructions of the Dockerfile, continuation lines joined, comments dropped. */
function instructions(): Array<{ op: string; args: string }> {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  it("carries what linkerd2-cni's chart runs from the same image", () => {
    const fromPlugin = instructions().filter((i) => i.op === 'COPY' && i.args.startsWith('--from=plugin')).map((i) => i.args.split(/\s+/)[2]);
    expect(fromPlugin).toEqual(['/opt/cni/bin/linkerd-cni', '/usr/lib/linkerd/linkerd-cni-repair-controller']);
    // The chart's preStop hook is `/bin/sh -c "kill -15 1; sleep 15s"`: the runtime image needs a shell.
    expect(instructions().filter((i) => i.op === 'FROM').at(-1)!.args).not.toMatch(/distroless/);
  });

  it('copies only sources that exist in the repository', () => {
    const copies = instructions().filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      for (const source of parts.slice(0, -1)) expect(existsSync(path.join(repoRoot, source)), source).toBe(true);
    }
  });

  it('builds and runs on Node 24 LTS, the major this test suite runs on, and labels the image', () => {
    const froms = instructions().filter((i) => i.op === 'FROM').map((i) => i.args);
    expect(froms).toContain('node:24-bookworm AS build');
    expect(froms.at(-1)).toBe('node:24-bookworm-slim');
    // The suite must exercise the runtime the image ships (docs/design.md, Tests), not the machine's own Node.
    expect(process.versions.node.split('.')[0]).toBe('24');
    const build = instructions().find((i) => i.op === 'RUN' && i.args.includes('npm ci'))?.args;
    expect(build).toContain('npm prune --omit=dev');
    // The registry's Node (an optional dependency for the tests) must not ship: the image has its own.
    expect(build).toContain('rm -rf node_modules/node-linux-*');
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
    for (const version of Object.values(pkg.optionalDependencies)) expect(version.split('.')[0]).toBe('24');
    const labels = instructions().filter((i) => i.op === 'LABEL').map((i) => i.args).join(' ');
    for (const key of ['title', 'description', 'version', 'licenses']) expect(labels).toContain(`org.opencontainers.image.${key}=`);
  });

  it("copies into the image everything its CMD needs, and the CMD runs the agent", async () => {
    const cmd = JSON.parse(instructions().find((i) => i.op === 'CMD')!.args) as string[];
    expect(cmd).toEqual(['node', 'dist/cni-chainer.mjs', 'run']);
    const copied = instructions().filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build')).map((i) => i.args.split(/\s+/)[2]);
    for (const needed of ['./package.json', './node_modules', './build/Release/cni_chainer.node', './dist/cni-chainer.mjs']) expect(copied).toContain(needed);
    // Files the bundle itself loads by a relative path (the Prometheus exposition, at the first scrape).
    const bundled = readFileSync(path.join(repoRoot, 'dist', 'cni-chainer.mjs'), 'latin1');
    const loaded = [...bundled.matchAll(/import\("(\.\/[^"]+)"\)/g)].map((m) => `./dist/${m[1]!.slice(2)}`);
    expect(loaded).toContain('./dist/cni-chainer-prometheus.mjs');
    for (const needed of loaded) expect(copied).toContain(needed);
    // The bundle needs no package but @parcel/watcher at run time: everything else is inside it.
    expect(Object.keys((JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { dependencies: object }).dependencies)).toEqual(['@parcel/watcher']);
    // The CMD itself, from the repository root (the image's /app has the same layout).
    const host = new NodeHost();
    host.put('10-flannel.conflist', fixture('10-flannel.conflist'));
    const daemon = host.start({}, cmd.slice(2));
    expect(daemon.child.spawnargs.slice(1)).toEqual([path.join(repoRoot, cmd[1]!), ...cmd.slice(2)]);
    await daemon.waitLog('started');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });
});

// Every layout the operator can deploy: `kustomize build` (Debian's kustomize, or the one built into
// kubectl), then every object validated against the Kubernetes OpenAPI schema (kubernetes-models) and
// the DaemonSet's environment against the agent's own zod schema.
const layouts = ['base', ...readdirSync(path.join(repoRoot, 'deploy', 'overlays')).map((o) => `overlays/${o}`)];
// Variables the image's runtime reads rather than the agent (allowed besides the agent's own).
const RUNTIME_ENV = ['MALLOC_ARENA_MAX'];


async function validateSchema(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  const modulePath = `kubernetes-models/${group === undefined ? '' : `${group}/`}${version}/${object.kind}`;
  const model = (await import(modulePath)) as Record<string, new (data: unknown) => { validate(): void }>;
  new model[object.kind]!(object).validate();
}

describe.skipIf(kustomize === undefined && process.env.CI !== 'true')('deploy/ (kustomize)', () => {
  it('has a kustomize binary in CI', () => {
    expect(kustomize, 'kustomize or kubectl must be installed (.ci/run)').toBeDefined();
  });

  describe.each(layouts)('%s', (layout) => {
    const objects = kustomize === undefined ? [] : build(layout);
    const byKind = (kind: string) => objects.find((o) => o.kind === kind)!;
    const daemonSet = byKind('DaemonSet');
    const pod = daemonSet?.spec.template.spec;
    const container = pod?.containers[0];
    type EnvVar = { name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } };
    const env = (container?.env ?? []) as EnvVar[];
    const value = (name: string) => env.find((e) => e.name === name)?.value;

    it('builds the namespace, account, RBAC, node-taint policy, config map and DaemonSet, each valid against the OpenAPI schema', async () => {
      expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'DaemonSet', 'Namespace', 'ResourceQuota', 'Role', 'RoleBinding', 'ServiceAccount', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
      for (const object of objects) await validateSchema(object);
      // The validator is strict enough to matter: a wrong type is refused.
      const broken = structuredClone(daemonSet);
      broken.spec.template.spec.containers[0].readinessProbe.periodSeconds = 'often';
      await expect(validateSchema(broken)).rejects.toThrow(/periodSeconds/);
    });

    it('sets only variables the agent knows, with values its schema accepts', () => {
      for (const { name } of env) expect([...ENV_NAMES, ...RUNTIME_ENV], name).toContain(name);
      const configMap = byKind('ConfigMap');
      // The downward API's values, as the kubelet fills them in.
      const downward: Record<string, string> = { 'metadata.name': 'linkerd-cni-x7k2p', 'metadata.namespace': 'linkerd-cni', 'spec.nodeName': 'node-1' };
      const resolved = Object.fromEntries(env.map((e) => [e.name, e.value ?? (e.valueFrom!.fieldRef === undefined ? configMap.data[e.valueFrom!.configMapKeyRef!.key] : downward[e.valueFrom!.fieldRef.fieldPath])]));
      const config = loadConfig(resolved);
      expect(config.plugin?.type).toBe('linkerd-cni');
      expect(config.healthPort).toBe(Number(value('HEALTH_PORT')));
      expect(config.pod).toEqual({ name: 'linkerd-cni-x7k2p', namespace: 'linkerd-cni' });
      expect(config.nodeName).toBe('node-1');
    });

    it('mounts the host dirs where CONTAINER_MOUNT_PREFIX + DEST_* say', () => {
      const mounts = Object.fromEntries(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
      const hostPaths = Object.fromEntries(pod.volumes.map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]));
      for (const dest of ['DEST_CNI_NET_DIR', 'DEST_CNI_BIN_DIR']) {
        const volume = Object.keys(hostPaths).find((n) => hostPaths[n] === value(dest))!;
        expect(volume, dest).toBeDefined();
        expect(mounts[volume]).toBe(`${value('CONTAINER_MOUNT_PREFIX')}${value(dest)}`);
      }
    });

    it('runs on the host network with loopback probes on HEALTH_PORT, a surge, and a grace period above the cleanup deadline', () => {
      expect(pod.hostNetwork).toBe(true);
      // A declared port would be a hostPort, and the surge pod would never be scheduled beside the old one.
      expect(container.ports).toBeUndefined();
      // The kubelet probes from the host; nothing on the cluster network reaches the port.
      expect(value('HEALTH_BIND')).toBe('127.0.0.1');
      expect(container.readinessProbe.httpGet).toEqual({ host: '127.0.0.1', path: '/readyz', port: Number(value('HEALTH_PORT')) });
      expect(container.livenessProbe.httpGet).toEqual({ host: '127.0.0.1', path: '/healthz', port: Number(value('HEALTH_PORT')) });
      expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
      expect(pod.priorityClassName).toBe('system-node-critical');
      expect(daemonSet.spec.updateStrategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(value('SHUTDOWN_TIMEOUT_S')));
      expect(pod.serviceAccountName).toBe(byKind('ServiceAccount').metadata.name);
    });

    it("lets the agent remove exactly the DaemonSet's NODE_TAINT_KEY (node-taint-policy.yaml)", () => {
      const policy = byKind('ValidatingAdmissionPolicy') as unknown as { spec: { variables: Array<{ name: string; expression: string }> } };
      expect(policy.spec.variables.find((v) => v.name === 'taintKey')?.expression).toBe(`'${value('NODE_TAINT_KEY')}'`);
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
      const quota = byKind('ResourceQuota');
      expect(quota.metadata.namespace).toBe(daemonSet.metadata.namespace);
      const scopes = quota.spec.scopeSelector.matchExpressions as Array<{ operator: string; scopeName: string; values: string[] }>;
      expect(scopes).toContainEqual({ operator: 'In', scopeName: 'PriorityClass', values: [pod.priorityClassName] });
      expect(Number(quota.spec.hard.pods)).toBeGreaterThanOrEqual(5000); // a node per pod, the largest clusters
    });

    it('admits its pods (Pod Security privileged) and grants what linkerd-cni needs with the token', () => {
      const ns = byKind('Namespace');
      expect(ns.metadata.labels!['pod-security.kubernetes.io/enforce']).toBe('privileged');
      for (const o of objects) if (o.kind !== 'Namespace' && o.kind !== 'ClusterRole' && o.kind !== 'ClusterRoleBinding') expect(o.metadata.namespace).toBe(ns.metadata.name);
      const rules = byKind('ClusterRole').rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
      const allows = (group: string, resource: string, verb: string) => rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
      for (const resource of ['pods', 'nodes', 'namespaces', 'services']) for (const verb of ['get', 'list', 'watch']) expect(allows('', resource, verb), `${verb} ${resource}`).toBe(true);
      expect(allows('', 'pods', 'delete')).toBe(true); // the repair controller
      expect(allows('events.k8s.io', 'events', 'create')).toBe(true);
      const binding = byKind('ClusterRoleBinding');
      expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: byKind('ClusterRole').metadata.name });
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: ns.metadata.name }]);
    });
  });
});
