#!/usr/bin/env node
// A stand-in for linkerd's own CNI installer (linkerd2-proxy-init: the Go `cni-install`, and before it
// `install-cni.sh`), written here from its documented behaviour, for the tests that switch a node
// between it and cni-chainer (test/integration/stop/foreign-installer.test.ts, test/cluster/helm.test.ts):
//
// - at its start only: copies every regular file of CONTAINER_CNI_BIN_DIR into the host's bin dir
//   (temp file and rename) and writes the kubeconfig from the service-account token;
// - watches net.d (inotify, through fs.watch) before it patches anything, then chains every config:
//   a `.conflist` gets every plugin of type linkerd-cni removed and the plugin appended; a single
//   plugin `.conf` becomes `<name>.conflist` and the `.conf` goes; the JSON is re-serialised with
//   two-space indents and written to `<name>.install`, then renamed into place. A file whose content
//   is what it last wrote is left alone;
// - rewrites the kubeconfig when the token directory's `..data` is renamed (token rotation);
// - at SIGTERM or SIGINT removes the plugin from every config it patched, writing each in place
//   (truncate and write, as Go's os.WriteFile does), then removes the kubeconfig and the binaries it
//   installed, and exits 0.
//
// No code of linkerd's is here. Environment: linkerd's (CONTAINER_MOUNT_PREFIX, DEST_CNI_NET_DIR,
// DEST_CNI_BIN_DIR, CONTAINER_CNI_BIN_DIR, KUBECONFIG_FILE_NAME, KUBECONFIG_MODE, CNI_NETWORK_CONFIG,
// KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT), and SERVICEACCOUNT_PATH for tests outside a pod.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';

const env = process.env;
const prefix = env.CONTAINER_MOUNT_PREFIX ?? '/host';
const netDirHost = env.DEST_CNI_NET_DIR ?? '/etc/cni/net.d';
const netDir = path.join(prefix, netDirHost);
const binDir = path.join(prefix, env.DEST_CNI_BIN_DIR ?? '/opt/cni/bin');
const sourceBin = env.CONTAINER_CNI_BIN_DIR ?? '/opt/cni/bin';
const kubeconfigName = env.KUBECONFIG_FILE_NAME ?? 'ZZZ-linkerd-cni-kubeconfig';
const saDir = env.SERVICEACCOUNT_PATH ?? '/var/run/secrets/kubernetes.io/serviceaccount';
const TYPE = 'linkerd-cni';

const log = (msg, fields = {}) => process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg, ...fields })}\n`);
const hash = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Files this installer wrote, by path: the hash of what it wrote. Its log, for the removal. */
const written = new Map();
const installedBinaries = [];

function plugin() {
  const text = (env.CNI_NETWORK_CONFIG ?? '').replaceAll('__KUBECONFIG_FILEPATH__', path.posix.join(netDirHost, kubeconfigName));
  return JSON.parse(text);
}

function installBinaries() {
  for (const name of readdirSync(sourceBin)) {
    const source = path.join(sourceBin, name);
    if (!statSync(source).isFile()) continue;
    const temp = path.join(binDir, `${name}.install`);
    copyFileSync(source, temp);
    chmodSync(temp, statSync(source).mode & 0o7777);
    renameSync(temp, path.join(binDir, name));
    installedBinaries.push(path.join(binDir, name));
  }
  log('installed binaries', { binaries: installedBinaries });
}

function writeKubeconfig() {
  let token;
  try {
    token = readFileSync(path.join(saDir, 'token'), 'utf8').trim();
  } catch {
    return; // not in a pod
  }
  const ca = readFileSync(path.join(saDir, 'ca.crt')).toString('base64');
  const text = `# Kubeconfig file for linkerd CNI plugin.
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ${env.KUBERNETES_SERVICE_PROTOCOL ?? 'https'}://${env.KUBERNETES_SERVICE_HOST}:${env.KUBERNETES_SERVICE_PORT}
    certificate-authority-data: ${ca}
users:
- name: linkerd-cni
  user:
    token: ${token}
contexts:
- name: linkerd-cni-context
  context:
    cluster: local
    user: linkerd-cni
current-context: linkerd-cni-context
`;
  const file = path.join(netDir, kubeconfigName);
  writeFileSync(`${file}.install`, text, { mode: Number.parseInt(env.KUBECONFIG_MODE ?? '600', 8) });
  renameSync(`${file}.install`, file);
  written.set(file, 'kubeconfig');
  log('wrote kubeconfig');
}

const isConfig = (name) => name.endsWith('.conflist') || name.endsWith('.conf');

function chain(name) {
  const file = path.join(netDir, name);
  let bytes;
  try {
    bytes = readFileSync(file);
  } catch {
    return; // gone meanwhile
  }
  if (written.get(file) === hash(bytes)) return;
  let doc;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    log('cannot parse config', { file: name, err: err.message });
    return;
  }
  let target = file;
  let result;
  if (typeof doc.type === 'string') {
    const { cniVersion: _dropped, ...single } = doc;
    result = { name: 'k8s-pod-network', cniVersion: '0.3.1', plugins: [single, plugin()] };
    if (name.endsWith('.conf')) target = `${file}list`;
  } else if (Array.isArray(doc.plugins)) {
    result = { ...doc, plugins: [...doc.plugins.filter((p) => p?.type !== TYPE), plugin()] };
  } else {
    return;
  }
  const out = Buffer.from(JSON.stringify(result, null, 2));
  writeFileSync(`${target}.install`, out, { mode: 0o644 });
  renameSync(`${target}.install`, target);
  written.set(target, hash(out));
  if (target !== file) rmSync(file, { force: true });
  log('chained config', { file: path.basename(target) });
}

function remove() {
  for (const [file, what] of written) {
    if (what === 'kubeconfig') continue;
    let doc;
    try {
      doc = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      continue;
    }
    if (!Array.isArray(doc.plugins) || !doc.plugins.some((p) => p?.type === TYPE)) continue;
    doc.plugins = doc.plugins.filter((p) => p?.type !== TYPE);
    // In place, as os.WriteFile: the file is truncated, then written.
    writeFileSync(file, JSON.stringify(doc, null, 2));
    log('removed plugin from config', { file: path.basename(file) });
  }
  rmSync(path.join(netDir, kubeconfigName), { force: true });
  for (const binary of installedBinaries) rmSync(binary, { force: true });
  log('removed kubeconfig and binaries');
}

installBinaries();
writeKubeconfig();
const watchers = [];
// The watch first, then the patch of what is there: a config written in between is seen by one or both.
watchers.push(
  watch(netDir, (_event, name) => {
    if (name !== null && isConfig(name) && !name.endsWith('.install')) chain(name);
  }),
);
if (existsSync(saDir)) watchers.push(watch(saDir, (_event, name) => name === '..data' && writeKubeconfig()));
for (const name of readdirSync(netDir)) if (isConfig(name)) chain(name);
log('started');

let stopping = false;
const stop = (signal) => {
  if (stopping) return;
  stopping = true;
  log('stopping', { signal });
  for (const w of watchers) w.close();
  remove();
  process.exit(0);
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
