// The environment contract (docs/design.md, Configuration), validated with zod. Every problem is reported at once, one
// line each naming the variable; the CLI exits 2 on any of them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
// zod/mini rather than zod's classic API: the same validator, tree-shaken to what is used. Bundled,
// the classic API costs ~13 MiB of RSS at start (measured: 15.3 vs 2.6 MiB over a bare node).
import * as z from 'zod/mini';
import { parsePlugin, type ChainedPlugin } from './cni/chained-plugin.js';
import { ConfigParseError } from './cni/scan-config.js';
import { compareNames, isConfigName, isLibcniName } from './cni/names.js';
import { isTempName, parseTempName } from './fs/temp-names.js';
import { optional, withDefault, fileName, absolutePath, hostOrAddress, address, integer, boolean, DNS_SUBDOMAIN, DNS_LABEL, TAINT_KEY } from './config-values.js';

// The owner file's name (daemon/lifecycle/ownership.ts), repeated here so that validating the environment loads
// no daemon code.
const OWNER_FILE = '.cni-chainer.owner';
// Multus' config: an owned config named by the operator must sort after it.
const MULTUS_CONFIG = '00-multus.conf';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

// One config read is held twice (read and patched) while its write runs: 16 MiB keeps that well
// inside the DaemonSet's memory limit (deploy/base/daemonset.yaml) on top of the agent's own.
export const MAX_CONFIG_BYTES_CAP = 16 << 20;
export const DEFAULT_TAINT_KEY = 'cni-chainer.io/agent-not-ready';

const envSchema = z.object({
  CONTAINER_MOUNT_PREFIX: withDefault(absolutePath, '/host'),
  DEST_CNI_NET_DIR: withDefault(absolutePath, '/etc/cni/net.d'),
  DEST_CNI_BIN_DIR: withDefault(absolutePath, '/opt/cni/bin'),
  CONTAINER_CNI_BIN_DIR: withDefault(absolutePath, '/opt/cni/bin'),
  CNI_NETWORK_CONFIG: optional(z.string()),
  CNI_NETWORK_CONFIG_FILE: optional(absolutePath),
  KUBECONFIG_FILE_NAME: withDefault(
    fileName('expected a file name without "/"').check(z.refine((s) => s !== '.' && s !== '..', 'expected a file name')),
    'ZZZ-linkerd-cni-kubeconfig',
  ),
  KUBECONFIG_MODE: withDefault(
    z
      .pipe(
        z.string().check(z.regex(/^0?[0-7]{3}$/, 'expected an octal file mode such as 600')),
        z.transform((s) => parseInt(s, 8)),
      )
      .check(z.refine((mode) => (mode & 0o077) === 0, 'must give group and others no access: the kubeconfig holds the service-account token (expected 600 or 400)')),
    '600',
  ),
  KUBERNETES_SERVICE_HOST: optional(hostOrAddress),
  KUBERNETES_SERVICE_PORT: optional(integer(1, 65535)),
  KUBERNETES_SERVICE_PROTOCOL: withDefault(z.enum(['https', 'http'], { message: 'expected https or http' }), 'https'),
  SERVICEACCOUNT_PATH: withDefault(absolutePath, '/var/run/secrets/kubernetes.io/serviceaccount'),
  KUBE_CA_FILE: optional(absolutePath),
  SKIP_TLS_VERIFY: withDefault(boolean, 'false'),
  CNI_CONF_SUFFIXES: withDefault(
    z
      .pipe(
        z.string(),
        z.transform((s) => s.split(',').map((x) => x.trim().toLowerCase()).filter((x) => x !== '')),
      )
      .check(z.refine((list) => list.length > 0 && list.every((x) => /^\.[^/]+$/.test(x)), 'expected a comma-separated list of suffixes starting with "."')),
    '.conflist,.conf',
  ),
  LOG_LEVEL: withDefault(z.enum(LOG_LEVELS, { message: `expected one of ${LOG_LEVELS.join(', ')}` }), 'info'),
  HEALTH_PORT: withDefault(integer(0, 65535), '9190'),
  // Loopback: the kubelet probes from the host (the probes say `host: 127.0.0.1`), and nothing on the
  // cluster network can reach the port to crowd out its connections (docs/design.md, Readiness).
  HEALTH_BIND: withDefault(address, '127.0.0.1'),
  // /metrics for a scraper on the cluster network: a server of its own, so that a flood there never
  // reaches the probes. Off (0) unless set.
  METRICS_PORT: withDefault(integer(0, 65535), '0'),
  METRICS_BIND: withDefault(address, '::'),
  RESYNC_INTERVAL_S: withDefault(integer(0, 86_400), '60'),
  WATCH_BACKEND: withDefault(z.enum(['native', 'parcel'], { message: 'expected native or parcel' }), 'native'),
  CNI_PATCH_SCOPE: withDefault(z.enum(['all', 'primary'], { message: 'expected all or primary' }), 'all'),
  MAX_CONFIG_BYTES: withDefault(integer(1024, MAX_CONFIG_BYTES_CAP), String(1 << 20)),
  // Below the manifest's terminationGracePeriodSeconds (30): kubelet's SIGKILL must never cut a cleanup.
  SHUTDOWN_TIMEOUT_S: withDefault(integer(1, 3600), '25'),
  LOG_FORMAT: withDefault(z.enum(['json', 'text'], { message: 'expected json or text' }), 'json'),
  CNI_PATCH_MODE: withDefault(z.enum(['in-place', 'owned'], { message: 'expected in-place or owned' }), 'in-place'),
  CNI_OWNED_CONFIG_NAME: optional(fileName('expected a file name without "/"')),
  // What SIGTERM does (docs/design.md, Stop): `auto` asks the API server whether the DaemonSet is going.
  CLEANUP_ON_STOP: withDefault(z.enum(['auto', 'always', 'never'], { message: 'expected auto, always or never' }), 'auto'),
  // The downward API's names of this pod and its node (deploy/base/daemonset.yaml).
  POD_NAME: optional(z.string().check(z.regex(DNS_SUBDOMAIN, 'expected a pod name (a DNS subdomain)'))),
  POD_NAMESPACE: optional(z.string().check(z.regex(DNS_LABEL, 'expected a namespace name (a DNS label)'))),
  NODE_NAME: optional(z.string().check(z.regex(DNS_SUBDOMAIN, 'expected a node name (a DNS subdomain)'))),
  // The startup taint the agent removes from its node once the chain exists (node gating).
  NODE_TAINT_KEY: withDefault(z.string().check(z.regex(TAINT_KEY, 'expected a taint key: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters')), DEFAULT_TAINT_KEY),
});

/** Every variable the daemon reads; deploy/daemonset.yaml may set no other. */
export const ENV_NAMES: readonly string[] = Object.keys(envSchema.shape);

type Env = z.infer<typeof envSchema>;

export interface Config {
  hostRoot: string;
  netDir: string; // host path
  binDir: string; // host path
  containerBinDir: string;
  /** The plugin to chain, placeholders substituted; undefined when neither variable is set. */
  plugin: ChainedPlugin | undefined;
  kubeconfigName: string;
  kubeconfigMode: number;
  kubernetes: { host: string | undefined; port: number; protocol: string };
  serviceAccountDir: string;
  caFile: string;
  skipTlsVerify: boolean;
  suffixes: string[];
  logLevel: (typeof LOG_LEVELS)[number];
  healthPort: number;
  resyncIntervalMs: number;
  backend: 'native' | 'parcel';
  scope: 'all' | 'primary';
  /** Larger config files are left alone with status too-large (bounded reads). */
  maxConfigBytes: number;
  shutdownTimeoutMs: number;
  logFormat: 'json' | 'text';
  mode: 'in-place' | 'owned';
  /**
   * The agent's own config file in owned mode, when the operator names it; by default it is derived
   * from the primary's name (cni/names.ts ownedNameFor), so that it sorts right before the primary.
   */
  ownedConfigName: string | undefined;
  /** The health server's address: loopback by default, where only the node itself reaches it. */
  healthHost: string;
  /** /metrics alone, for scrapers on the cluster network; 0 = off. */
  metricsPort: number;
  /** `::` is dual-stack (IPv4 too), for IPv4, IPv6 and dual-stack clusters. */
  metricsHost: string;
  cleanupOnStop: 'auto' | 'always' | 'never';
  /** This pod and its node, as the downward API names them; undefined outside Kubernetes. */
  pod: { name: string; namespace: string } | undefined;
  nodeName: string | undefined;
  taintKey: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

function loadPlugin(env: Env, problems: string[]): ChainedPlugin | undefined {
  let variable = 'CNI_NETWORK_CONFIG';
  let text = env.CNI_NETWORK_CONFIG;
  // The file wins (linkerd mounts it from a ConfigMap). Set but unreadable is an error, never a silent
  // fall-back to the variable: that would chain a config the operator did not mean.
  if (env.CNI_NETWORK_CONFIG_FILE !== undefined) {
    variable = 'CNI_NETWORK_CONFIG_FILE';
    try {
      text = readFileSync(env.CNI_NETWORK_CONFIG_FILE, 'utf8');
    } catch (err) {
      problems.push(`${variable}: cannot read ${env.CNI_NETWORK_CONFIG_FILE}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      return undefined;
    }
  }
  if (text === undefined) return undefined;
  // The text is chained as given (docs/design.md, A pass): numbers JavaScript cannot hold exactly
  // (1e400, 2^53+1) reach the plugin as written. The placeholder only ever stands inside a JSON string,
  // so it is replaced by the path's escaped string content.
  const kubeconfigPath = path.posix.join(env.DEST_CNI_NET_DIR, env.KUBECONFIG_FILE_NAME);
  const substituted = text.split('__KUBECONFIG_FILEPATH__').join(JSON.stringify(kubeconfigPath).slice(1, -1));
  try {
    return parsePlugin(substituted);
  } catch (err) {
    if (!(err instanceof ConfigParseError)) throw err;
    problems.push(`${variable}: expected the plugin's JSON config (an object with a non-empty string "type"), got ${err.message}`);
    return undefined;
  }
}

/**
 * Values that are well-formed but would break the node or the agent (docs/design.md, Configuration): each is a problem
 * naming its variable, like a malformed one.
 */
function harmfulValues(env: Env): string[] {
  const problems: string[] = [];
  const kubeconfig = env.KUBECONFIG_FILE_NAME;
  if (isConfigName(kubeconfig, env.CNI_CONF_SUFFIXES) || isLibcniName(kubeconfig)) {
    problems.push(`KUBECONFIG_FILE_NAME: ${JSON.stringify(kubeconfig)} would count as a CNI config (the runtime could load the kubeconfig as its network config)`);
  }
  if (kubeconfig === OWNER_FILE || parseTempName(kubeconfig) !== undefined || isTempName(kubeconfig)) {
    problems.push(`KUBECONFIG_FILE_NAME: ${JSON.stringify(kubeconfig)} collides with the agent's own files`);
  }
  for (const suffix of env.CNI_CONF_SUFFIXES) {
    if (!isConfigName(`x${suffix}`, [suffix])) {
      problems.push(`CNI_CONF_SUFFIXES: ${JSON.stringify(suffix)} names temporary or backup files, which are never configs`);
    }
  }
  const owned = env.CNI_OWNED_CONFIG_NAME;
  // Unset, the name is derived from the primary's at run time.
  if (owned !== undefined && (!owned.endsWith('.conflist') || owned.startsWith('.') || isTempName(owned))) {
    problems.push(`CNI_OWNED_CONFIG_NAME: ${JSON.stringify(owned)} must be a visible name ending in .conflist (the runtime loads it as a conflist)`);
  } else if (owned !== undefined && compareNames(owned, MULTUS_CONFIG) <= 0) {
    problems.push(`CNI_OWNED_CONFIG_NAME: ${JSON.stringify(owned)} must sort after ${MULTUS_CONFIG} (Multus takes the first other config as its default network)`);
  }
  if (owned === kubeconfig) problems.push(`CNI_OWNED_CONFIG_NAME: ${JSON.stringify(owned)} is also KUBECONFIG_FILE_NAME`);
  if (env.METRICS_PORT !== 0 && env.METRICS_PORT === env.HEALTH_PORT) problems.push(`METRICS_PORT: ${env.METRICS_PORT} is also HEALTH_PORT: the metrics server needs a port of its own`);
  if (path.posix.normalize(env.DEST_CNI_NET_DIR) === '/') problems.push('DEST_CNI_NET_DIR: must not be the root directory');
  if (path.posix.normalize(env.DEST_CNI_BIN_DIR) === '/') problems.push('DEST_CNI_BIN_DIR: must not be the root directory');
  return problems;
}

/** The namespace the service-account mount names (every pod's mount has it). */
function readNamespace(serviceAccountDir: string): string | undefined {
  try {
    const ns = readFileSync(path.join(serviceAccountDir, 'namespace'), 'utf8').trim();
    return DNS_LABEL.test(ns) ? ns : undefined;
  } catch {
    return undefined;
  }
}

/** Validates the environment; throws ConfigError listing every problem. */
export function loadConfig(environment: NodeJS.ProcessEnv): Config {
  const result = z.safeParse(envSchema, environment);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'environment');
      const value = environment[name];
      return `${name}: ${issue.message}${value === undefined ? '' : `, got ${JSON.stringify(value)}`}`;
    });
    throw new ConfigError(problems);
  }
  const env = result.data;
  const problems = harmfulValues(env);
  const plugin = loadPlugin(env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    hostRoot: env.CONTAINER_MOUNT_PREFIX,
    netDir: path.posix.normalize(env.DEST_CNI_NET_DIR),
    binDir: path.posix.normalize(env.DEST_CNI_BIN_DIR),
    containerBinDir: env.CONTAINER_CNI_BIN_DIR,
    plugin,
    kubeconfigName: env.KUBECONFIG_FILE_NAME,
    kubeconfigMode: env.KUBECONFIG_MODE,
    kubernetes: {
      host: env.KUBERNETES_SERVICE_HOST,
      port: env.KUBERNETES_SERVICE_PORT ?? 443,
      protocol: env.KUBERNETES_SERVICE_PROTOCOL,
    },
    serviceAccountDir: env.SERVICEACCOUNT_PATH,
    caFile: env.KUBE_CA_FILE ?? path.join(env.SERVICEACCOUNT_PATH, 'ca.crt'),
    skipTlsVerify: env.SKIP_TLS_VERIFY,
    suffixes: env.CNI_CONF_SUFFIXES,
    logLevel: env.LOG_LEVEL,
    healthPort: env.HEALTH_PORT,
    resyncIntervalMs: env.RESYNC_INTERVAL_S * 1000,
    backend: env.WATCH_BACKEND,
    scope: env.CNI_PATCH_SCOPE,
    maxConfigBytes: env.MAX_CONFIG_BYTES,
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_S * 1000,
    logFormat: env.LOG_FORMAT,
    healthHost: env.HEALTH_BIND,
    metricsPort: env.METRICS_PORT,
    metricsHost: env.METRICS_BIND,
    cleanupOnStop: env.CLEANUP_ON_STOP,
    pod: env.POD_NAME === undefined ? undefined : { name: env.POD_NAME, namespace: env.POD_NAMESPACE ?? readNamespace(env.SERVICEACCOUNT_PATH) ?? 'default' },
    nodeName: env.NODE_NAME,
    taintKey: env.NODE_TAINT_KEY,
    mode: env.CNI_PATCH_MODE,
    ownedConfigName: env.CNI_OWNED_CONFIG_NAME,
  };
}

/** The plugin is required by every command that edits or checks configs. */
export function requirePlugin(config: Config): ChainedPlugin {
  if (config.plugin === undefined) {
    throw new ConfigError(['CNI_NETWORK_CONFIG: required (or CNI_NETWORK_CONFIG_FILE naming a readable file)']);
  }
  return config.plugin;
}
