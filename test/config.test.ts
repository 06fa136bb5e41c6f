import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_NAMES, loadConfig, requirePlugin } from '../src/config.js';
import { expectedPlugin, pluginText } from './helpers/fixtures.js';
import { tempDir } from './helpers/tmp.js';

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ CNI_NETWORK_CONFIG: pluginText });
    expect(config).toMatchObject({
      hostRoot: '/host',
      netDir: '/etc/cni/net.d',
      binDir: '/opt/cni/bin',
      containerBinDir: '/opt/cni/bin',
      kubeconfigName: 'ZZZ-linkerd-cni-kubeconfig',
      kubeconfigMode: 0o600,
      kubernetes: { host: undefined, port: 443, protocol: 'https' },
      serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount',
      caFile: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
      skipTlsVerify: false,
      suffixes: ['.conflist', '.conf'],
      logLevel: 'info',
      healthPort: 9190,
      resyncIntervalMs: 60_000,
      backend: 'native',
      scope: 'all',
    });
  });

  it('substitutes __KUBECONFIG_FILEPATH__ and leaves other placeholders to the plugin', () => {
    const plugin = requirePlugin(loadConfig({ CNI_NETWORK_CONFIG: pluginText, DEST_CNI_NET_DIR: '/etc/cni/net.d' }));
    expect(JSON.parse(plugin.text)).toEqual(expectedPlugin());
    expect(plugin.type).toBe('linkerd-cni');
    expect(plugin.text).toContain('__SERVICEACCOUNT_TOKEN__');
    // The text is used as given: only the placeholder changed, every other byte (trimmed) is the file's.
    expect(plugin.text).toBe(pluginText.trim().replaceAll('__KUBECONFIG_FILEPATH__', '/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig'));
  });

  it('keeps numbers JavaScript cannot hold exactly, as written (1e400, 2^53+1, 1.0)', () => {
    const text = '{"type":"p","big":9007199254740993,"huge":1e400,"float":1.0,"neg":-0}';
    const plugin = requirePlugin(loadConfig({ CNI_NETWORK_CONFIG: text }));
    expect(plugin.text).toBe(text);
  });

  it('escapes the kubeconfig path inside the JSON string it replaces', () => {
    const plugin = requirePlugin(loadConfig({ CNI_NETWORK_CONFIG: '{"type":"p","k":"__KUBECONFIG_FILEPATH__"}', KUBECONFIG_FILE_NAME: 'a"b\\c' }));
    expect(JSON.parse(plugin.text).k).toBe('/etc/cni/net.d/a"b\\c');
  });

  it('prefers CNI_NETWORK_CONFIG_FILE, and refuses one that is set but unreadable (never falls back)', () => {
    const file = path.join(tempDir(), 'plugin.json');
    writeFileSync(file, '{"type":"from-file"}');
    expect(loadConfig({ CNI_NETWORK_CONFIG: '{"type":"from-env"}', CNI_NETWORK_CONFIG_FILE: file }).plugin?.type).toBe('from-file');
    expect(problems({ CNI_NETWORK_CONFIG: '{"type":"from-env"}', CNI_NETWORK_CONFIG_FILE: `${file}.missing` })).toEqual([`CNI_NETWORK_CONFIG_FILE: cannot read ${file}.missing: ENOENT`]);
    expect(problems({ CNI_NETWORK_CONFIG_FILE: path.dirname(file) })).toEqual([`CNI_NETWORK_CONFIG_FILE: cannot read ${path.dirname(file)}: EISDIR`]);
  });

  it('takes host names and IPv4 and IPv6 addresses for the API server and the health server', () => {
    for (const host of ['10.96.0.1', 'fd00::1', '::1', 'kubernetes.default.svc', 'api-1.example.com.', 'localhost']) {
      expect(loadConfig({ KUBERNETES_SERVICE_HOST: host }).kubernetes.host).toBe(host);
    }
    // Loopback by default: only the node itself reaches the probes.
    expect(loadConfig({}).healthHost).toBe('127.0.0.1');
    expect(loadConfig({}).metricsHost).toBe('::');
    for (const bind of ['0.0.0.0', '127.0.0.1', '::1', 'fd00::10']) expect(loadConfig({ HEALTH_BIND: bind }).healthHost).toBe(bind);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ HEALTH_PORT: '', CONTAINER_MOUNT_PREFIX: '' })).toMatchObject({ healthPort: 9190, hostRoot: '/host' });
  });

  it('parses suffixes case-insensitively and octal modes', () => {
    expect(loadConfig({ CNI_CONF_SUFFIXES: '.conflist, .CONF,.conflist-current', KUBECONFIG_MODE: '0400' })).toMatchObject({
      suffixes: ['.conflist', '.conf', '.conflist-current'],
      kubeconfigMode: 0o400,
    });
  });

  it.each([
    ['CONTAINER_MOUNT_PREFIX', 'host', 'absolute path'],
    ['DEST_CNI_NET_DIR', 'etc/cni', 'absolute path'],
    ['KUBECONFIG_MODE', '999', 'octal'],
    ['KUBECONFIG_FILE_NAME', 'a/b', 'file name'],
    ['KUBERNETES_SERVICE_PORT', '70000', 'whole number'],
    ['KUBERNETES_SERVICE_PROTOCOL', 'ftp', 'https or http'],
    ['SKIP_TLS_VERIFY', 'yes', 'true or false'],
    ['CNI_CONF_SUFFIXES', 'conflist', 'suffixes'],
    ['LOG_LEVEL', 'verbose', 'one of'],
    ['HEALTH_PORT', '-1', 'whole number'],
    ['RESYNC_INTERVAL_S', '1.5', 'whole number'],
    ['WATCH_BACKEND', 'fsevents', 'native or parcel'],
    ['CNI_PATCH_SCOPE', 'some', 'all or primary'],
    ['CNI_NETWORK_CONFIG', '{"type":', 'not valid JSON'],
    ['CNI_NETWORK_CONFIG', '{"type":"p"} junk', 'not valid JSON'],
    ['MAX_CONFIG_BYTES', '10', 'whole number'],
    ['SHUTDOWN_TIMEOUT_S', '0', 'whole number'],
    ['LOG_FORMAT', 'xml', 'json or text'],
    // Well-formed but harmful (docs/design.md, Configuration).
    ['KUBECONFIG_FILE_NAME', '00-kube.conflist', 'count as a CNI config'],
    ['KUBECONFIG_FILE_NAME', 'kube.json', 'count as a CNI config'],
    ['KUBECONFIG_FILE_NAME', '.cni-chainer.owner', "agent's own files"],
    ['CNI_CONF_SUFFIXES', '.tmp', 'temporary or backup'],
    ['CNI_CONF_SUFFIXES', '.conflist,.bak', 'temporary or backup'],
    ['DEST_CNI_NET_DIR', '/', 'root directory'],
    ['DEST_CNI_NET_DIR', '//.', 'root directory'],
    ['CNI_PATCH_MODE', 'copy', 'in-place or owned'],
    ['CNI_OWNED_CONFIG_NAME', 'linkerd.conf', 'ending in .conflist'],
    ['CNI_OWNED_CONFIG_NAME', '00-a.conflist', 'sort after 00-multus.conf'],
    ['CNI_NETWORK_CONFIG', '{"name":"x"}', '"type"'],
    // The kubeconfig holds the service-account token: nobody but its owner may read it.
    ['KUBECONFIG_MODE', '644', 'no access'],
    ['KUBECONFIG_MODE', '666', 'no access'],
    ['KUBECONFIG_MODE', '777', 'no access'],
    ['KUBECONFIG_MODE', '640', 'no access'],
    ['KUBECONFIG_MODE', '602', 'no access'],
    // One read must fit the pod's memory limit.
    ['MAX_CONFIG_BYTES', String(1 << 30), 'whole number from 1024 to 16777216'],
    ['MAX_CONFIG_BYTES', String((16 << 20) + 1), 'whole number'],
    // Control characters would forge log and report lines.
    ['KUBECONFIG_FILE_NAME', 'kube\nconfig', 'control characters'],
    ['CNI_OWNED_CONFIG_NAME', '10-a\u0007.conflist', 'control characters'],
    ['DEST_CNI_NET_DIR', '/etc/cni/net.d\r', 'control characters'],
    ['KUBERNETES_SERVICE_HOST', 'a b', 'host name or an IP address'],
    ['KUBERNETES_SERVICE_HOST', 'host:443', 'host name or an IP address'],
    ['KUBERNETES_SERVICE_HOST', '[fd00::1]', 'host name or an IP address'],
    ['KUBERNETES_SERVICE_HOST', '256.1.1.1', 'host name or an IP address'],
    ['KUBERNETES_SERVICE_HOST', '-bad.example', 'host name or an IP address'],
    ['HEALTH_BIND', 'localhost', 'IP address'],
    ['HEALTH_BIND', '10.0.0.256', 'IP address'],
  ])('rejects %s=%s naming the variable', (name, value, expected) => {
    const found = problems({ [name]: value });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(new RegExp(`^${name}: .*${expected.replace(/[()"]/g, '.')}`));
  });

  it('reports every bad variable at once', () => {
    expect(problems({ HEALTH_PORT: 'x', WATCH_BACKEND: 'y', LOG_LEVEL: 'z' }).map((p) => p.split(':')[0]).sort()).toEqual(['HEALTH_PORT', 'LOG_LEVEL', 'WATCH_BACKEND']);
  });

  it('requires a plugin for commands that edit configs', () => {
    expect(() => requirePlugin(loadConfig({}))).toThrow(/CNI_NETWORK_CONFIG/);
  });

  it('knows every variable the README documents', () => {
    expect(ENV_NAMES).toEqual(
      expect.arrayContaining(['CONTAINER_MOUNT_PREFIX', 'DEST_CNI_NET_DIR', 'DEST_CNI_BIN_DIR', 'CONTAINER_CNI_BIN_DIR', 'CNI_NETWORK_CONFIG', 'CNI_NETWORK_CONFIG_FILE', 'KUBECONFIG_FILE_NAME', 'KUBECONFIG_MODE', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'KUBERNETES_SERVICE_PROTOCOL', 'KUBE_CA_FILE', 'SKIP_TLS_VERIFY', 'SERVICEACCOUNT_PATH', 'CNI_CONF_SUFFIXES', 'LOG_LEVEL', 'HEALTH_PORT', 'RESYNC_INTERVAL_S', 'WATCH_BACKEND', 'CNI_PATCH_SCOPE', 'MAX_CONFIG_BYTES', 'SHUTDOWN_TIMEOUT_S', 'LOG_FORMAT', 'CNI_PATCH_MODE', 'CNI_OWNED_CONFIG_NAME', 'HEALTH_BIND', 'METRICS_PORT', 'METRICS_BIND', 'CLEANUP_ON_STOP', 'POD_NAME', 'POD_NAMESPACE', 'NODE_NAME', 'NODE_TAINT_KEY']),
    );
  });
});
