// The DaemonSet's pod, as kubelet would hand it to the runtime: the one place where the manifest's pod
// spec becomes CRI sandbox and container configs. Every field of the pod spec is either translated or
// named here as one kubelet does not pass to the runtime (scheduling); any other field fails the
// translation, so that a field added to the manifest cannot go untested unnoticed.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { K8sObject } from '../helpers/kustomize.js';

/** Where the test's node is: hostPath volumes live under `hostRoot` on this machine. */
export interface Node {
  hostRoot: string;
  /** The service-account token dir kubelet would project (token, ca.crt). */
  serviceAccountDir: string;
  /** What kubelet injects for the API server. */
  apiServer: { host: string; port: string };
  cgroupParent: string;
  logDir: string;
}

export interface HttpProbe {
  path: string;
  port: number;
  periodSeconds: number;
  failureThreshold: number;
}

export interface TranslatedPod {
  sandbox: object;
  container: object;
  readiness: HttpProbe | undefined;
  liveness: HttpProbe | undefined;
  /** lifecycle.preStop.exec.command, run before the stop signal. */
  preStop: string[] | undefined;
  gracePeriodS: number;
  memoryLimitBytes: number | undefined;
  memoryRequestBytes: number | undefined;
}

// Fields kubelet uses for admission or scheduling, or that the API server resolves: nothing of them
// reaches the container runtime. (serviceAccountName is translated: kubelet mounts the token.)
const POD_SCHEDULING_ONLY = new Set(['priorityClassName', 'nodeSelector', 'tolerations']);

const QUANTITY = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|k|M|G|m)?$/;
const FACTORS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, k: 1e3, M: 1e6, G: 1e9, m: 1e-3 };

/** A Kubernetes quantity ("160Mi", "10m") as a number. */
export function quantity(value: string | number): number {
  const m = QUANTITY.exec(String(value));
  if (m === null) throw new Error(`not a quantity: ${value}`);
  return Number(m[1]) * FACTORS[m[2] ?? '']!;
}

class Fields {
  private readonly seen = new Set<string>();
  constructor(
    private readonly where: string,
    private readonly object: Record<string, unknown>,
  ) {}

  take<T>(key: string): T | undefined {
    this.seen.add(key);
    return this.object[key] as T | undefined;
  }

  skip(keys: Iterable<string>): void {
    for (const key of keys) this.seen.add(key);
  }

  /** Throws naming every field no one took. */
  done(): void {
    const left = Object.keys(this.object).filter((k) => !this.seen.has(k));
    if (left.length > 0) throw new Error(`pod spec fields not translated to CRI: ${left.map((k) => `${this.where}.${k}`).join(', ')}`);
  }
}

function probe(where: string, raw: Record<string, unknown> | undefined): HttpProbe | undefined {
  if (raw === undefined) return undefined;
  const f = new Fields(where, raw);
  const get = f.take<Record<string, unknown>>('httpGet');
  if (get === undefined) throw new Error(`${where}: only httpGet probes are translated`);
  const g = new Fields(`${where}.httpGet`, get);
  // The emulated kubelet probes from the host's loopback, as `host: 127.0.0.1` asks.
  const host = g.take<string>('host');
  if (host !== undefined && host !== '127.0.0.1') throw new Error(`${where}.httpGet.host: only 127.0.0.1 is translated`);
  const result = { path: g.take<string>('path') ?? '/', port: Number(g.take('port')), periodSeconds: f.take<number>('periodSeconds') ?? 10, failureThreshold: f.take<number>('failureThreshold') ?? 3 };
  g.done();
  f.done();
  return result;
}

/** The pod of `daemonSet` (its first container), `configMaps` resolving its env, on `node`. */
export function translatePod(daemonSet: K8sObject, configMaps: K8sObject[], image: string, node: Node, name: string): TranslatedPod {
  const template = daemonSet.spec.template as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  const spec = new Fields('spec', template.spec);
  spec.skip(POD_SCHEDULING_ONLY);
  const hostNetwork = spec.take<boolean>('hostNetwork') === true;
  const gracePeriodS = spec.take<number>('terminationGracePeriodSeconds') ?? 30;
  const serviceAccount = spec.take<string>('serviceAccountName');
  const podSecurity = new Fields('spec.securityContext', spec.take<Record<string, unknown>>('securityContext') ?? {});
  const podSeccomp = podSecurity.take<{ type: string }>('seccompProfile');
  podSecurity.done();
  const volumes = new Map<string, string>();
  for (const [i, volume] of (spec.take<Array<Record<string, unknown>>>('volumes') ?? []).entries()) {
    const v = new Fields(`spec.volumes[${i}]`, volume);
    const volumeName = v.take<string>('name')!;
    const hostPath = v.take<{ path: string; type?: string }>('hostPath');
    if (hostPath === undefined) throw new Error(`spec.volumes[${i}]: only hostPath volumes are translated`);
    const onDisk = path.join(node.hostRoot, hostPath.path);
    // kubelet makes a DirectoryOrCreate path before the container starts.
    if (hostPath.type === 'DirectoryOrCreate') mkdirSync(onDisk, { recursive: true });
    else if (hostPath.type !== undefined && hostPath.type !== 'Directory') throw new Error(`spec.volumes[${i}].hostPath.type ${hostPath.type} is not translated`);
    volumes.set(volumeName, onDisk);
    v.done();
  }
  const containers = spec.take<Array<Record<string, unknown>>>('containers')!;
  if (containers.length !== 1) throw new Error('exactly one container is translated');
  spec.done();

  const c = new Fields('spec.containers[0]', containers[0]!);
  const containerName = c.take<string>('name')!;
  c.take('image'); // the image under test replaces the manifest's tag
  const envs: Array<{ key: string; value: string }> = [];
  for (const [i, env] of (c.take<Array<Record<string, unknown>>>('env') ?? []).entries()) {
    const e = new Fields(`spec.containers[0].env[${i}]`, env);
    const key = e.take<string>('name')!;
    const value = e.take<string>('value');
    const from = e.take<{ configMapKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } }>('valueFrom');
    if (value !== undefined) envs.push({ key, value: String(value) });
    // The downward API's pod and node names: this emulated node has no API server to ask about them,
    // so they stay unset, and the agent decides its stop as it does outside Kubernetes.
    else if (from?.fieldRef !== undefined) continue;
    else if (from?.configMapKeyRef !== undefined) {
      const ref = from.configMapKeyRef;
      const map = configMaps.find((m) => m.metadata.name === ref.name);
      const data = (map?.data as Record<string, string> | undefined)?.[ref.key];
      if (data === undefined) throw new Error(`env ${key}: ConfigMap ${ref.name} has no key ${ref.key}`);
      envs.push({ key, value: data });
    } else throw new Error(`spec.containers[0].env[${i}] (${key}): only value and configMapKeyRef are translated`);
    e.done();
  }
  // What kubelet adds to every container: the API server's address.
  envs.push({ key: 'KUBERNETES_SERVICE_HOST', value: node.apiServer.host }, { key: 'KUBERNETES_SERVICE_PORT', value: node.apiServer.port });
  const readiness = probe('spec.containers[0].readinessProbe', c.take('readinessProbe'));
  const liveness = probe('spec.containers[0].livenessProbe', c.take('livenessProbe'));
  const lifecycle = c.take<{ preStop?: { exec?: { command: string[] } } }>('lifecycle');
  const preStop = lifecycle?.preStop?.exec?.command;
  if (lifecycle !== undefined && (preStop === undefined || Object.keys(lifecycle).length !== 1)) throw new Error('spec.containers[0].lifecycle: only preStop.exec is translated');
  const resources = c.take<{ requests?: Record<string, string>; limits?: Record<string, string> }>('resources') ?? {};
  const memoryLimitBytes = resources.limits?.memory === undefined ? undefined : quantity(resources.limits.memory);
  const memoryRequestBytes = resources.requests?.memory === undefined ? undefined : quantity(resources.requests.memory);
  const cpuRequest = resources.requests?.cpu === undefined ? 0 : quantity(resources.requests.cpu);
  for (const key of Object.keys(resources.limits ?? {})) if (key !== 'memory') throw new Error(`resources.limits.${key} is not translated`);
  const security = new Fields('spec.containers[0].securityContext', c.take<Record<string, unknown>>('securityContext') ?? {});
  const runAsUser = security.take<number>('runAsUser');
  const allowPrivilegeEscalation = security.take<boolean>('allowPrivilegeEscalation');
  const readOnlyRootFilesystem = security.take<boolean>('readOnlyRootFilesystem') === true;
  const privileged = security.take<boolean>('privileged') === true;
  const capabilities = security.take<{ add?: string[]; drop?: string[] }>('capabilities') ?? {};
  security.done();
  const mounts: Array<{ container_path: string; host_path: string; readonly: boolean }> = [];
  for (const [i, mount] of (c.take<Array<Record<string, unknown>>>('volumeMounts') ?? []).entries()) {
    const m = new Fields(`spec.containers[0].volumeMounts[${i}]`, mount);
    const hostPath = volumes.get(m.take<string>('name')!);
    if (hostPath === undefined) throw new Error(`volumeMounts[${i}]: no such volume`);
    mounts.push({ container_path: m.take<string>('mountPath')!, host_path: hostPath, readonly: m.take<boolean>('readOnly') === true });
    m.done();
  }
  if (serviceAccount !== undefined) {
    // kubelet projects the service account's token and CA here.
    mounts.push({ container_path: '/var/run/secrets/kubernetes.io/serviceaccount', host_path: node.serviceAccountDir, readonly: true });
  }
  c.done();

  const seccomp = podSeccomp?.type === 'RuntimeDefault' ? { profile_type: 'RuntimeDefault' } : podSeccomp === undefined ? { profile_type: 'Unconfined' } : undefined;
  if (seccomp === undefined) throw new Error(`seccompProfile ${podSeccomp?.type} is not translated`);
  const namespaces = { network: hostNetwork ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' };
  const meta = template.metadata as { labels?: Record<string, string>; annotations?: Record<string, string> };
  const sandbox = {
    metadata: { name, uid: `uid-${name}`, namespace: daemonSet.metadata.namespace ?? 'default', attempt: 0 },
    // A host-network pod shares the node's UTS namespace: kubelet sets no hostname.
    hostname: hostNetwork ? '' : name,
    log_directory: path.join(node.logDir, name),
    labels: meta.labels ?? {},
    annotations: meta.annotations ?? {},
    linux: { cgroup_parent: node.cgroupParent, security_context: { namespace_options: namespaces, seccomp } },
  };
  mkdirSync(sandbox.log_directory, { recursive: true });
  const container = {
    metadata: { name: containerName, attempt: 0 },
    image: { image },
    envs,
    mounts,
    labels: {},
    log_path: `${containerName}/0.log`,
    linux: {
      resources: { memory_limit_in_bytes: memoryLimitBytes ?? 0, cpu_shares: Math.max(2, Math.round(cpuRequest * 1024)) },
      security_context: {
        capabilities: { add_capabilities: capabilities.add ?? [], drop_capabilities: capabilities.drop ?? [] },
        privileged,
        namespace_options: namespaces,
        ...(runAsUser === undefined ? {} : { run_as_user: { value: runAsUser } }),
        readonly_rootfs: readOnlyRootFilesystem,
        no_new_privs: allowPrivilegeEscalation === false,
        seccomp,
      },
    },
  };
  return { sandbox, container, readiness, liveness, preStop, gracePeriodS, memoryLimitBytes, memoryRequestBytes };
}
