// Warms Node's module compile cache (NODE_COMPILE_CACHE) for the bundles named on the command line:
//
//   node scripts/compile-cache.mjs dist/compile-cache dist/cni-chainer.mjs [dist/bench/bare-agent.mjs]
//
// Without a cache V8 parses the bundle at every start and compiles each function the first time it
// runs; the start runs a few hundred of them before the first config is chained. The cache holds
// their bytecode, so a start reads it instead (measured: exec to the first config chained 10 ms
// shorter, medians of 31 interleaved starts; docs/performance.md). The image ships the cache made
// at its build and points NODE_COMPILE_CACHE at it (Dockerfile); the bench starts the agent the
// same way.
//
// The cache is made by running each bundle once as the agent runs on a node, on a scratch tree
// with one config to chain: what is compiled is the start that matters. Portable mode
// (NODE_COMPILE_CACHE_PORTABLE=1) keys each entry by the bundle's path relative to the cache
// directory, so the cache made in the image's build stage (/src) is valid where the image runs it
// (/app). An entry is used only by the same Node build and V8 flags, and only for the same bytes
// of the bundle; anything else is a miss, which costs nothing but the cache's benefit. A warm-up
// that fails leaves the directory empty and fails no build: the cache is an optimisation, never a dependency.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const WARM_UP_TIMEOUT_MS = 30_000;

// A primary's conflist and the plugin to chain into it: the start's path through planning,
// writing and the probes is the same for any valid pair.
const PRIMARY = JSON.stringify({ cniVersion: '1.0.0', name: 'warm-up', plugins: [{ type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local', subnet: '10.88.0.0/16' } }] }, null, 2);
const PLUGIN = JSON.stringify({ name: 'linkerd-cni', type: 'linkerd-cni', log_level: 'info', kubernetes: { kubeconfig: '__KUBECONFIG_FILEPATH__' }, linkerd: { 'incoming-proxy-port': 4143 } });

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One start of `bundle` as the agent: until it says it started, then the cache is flushed. */
async function warm(cacheDir, bundle) {
  const scratch = mkdtempSync(path.join(tmpdir(), 'cni-chainer-warm-'));
  try {
    const hostRoot = path.join(scratch, 'host');
    const netDir = path.join(hostRoot, 'etc', 'cni', 'net.d');
    const containerBin = path.join(scratch, 'bin');
    mkdirSync(netDir, { recursive: true });
    mkdirSync(containerBin, { recursive: true });
    writeFileSync(path.join(containerBin, 'linkerd-cni'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(path.join(netDir, '10-warm-up.conflist'), PRIMARY);
    const env = {
      PATH: process.env.PATH,
      NODE_COMPILE_CACHE: cacheDir,
      NODE_COMPILE_CACHE_PORTABLE: '1',
      CONTAINER_MOUNT_PREFIX: hostRoot,
      CONTAINER_CNI_BIN_DIR: containerBin,
      SERVICEACCOUNT_PATH: path.join(scratch, 'no-serviceaccount'),
      CNI_NETWORK_CONFIG: PLUGIN,
      HEALTH_PORT: String(await freePort()),
      RESYNC_INTERVAL_S: '0',
    };
    const flush = pathToFileURL(path.join(import.meta.dirname, 'compile-cache-flush.mjs')).href;
    const child = spawn(process.execPath, ['--import', flush, bundle, 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no start within ${WARM_UP_TIMEOUT_MS / 1000} s`)), WARM_UP_TIMEOUT_MS);
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk) => {
          out += chunk;
          if (/"msg":"started"/.test(out) && !child.killed) {
            out = '';
            child.kill('SIGUSR2');
          }
        });
        child.stderr.on('data', (chunk) => {
          err += chunk;
          if (err.includes('compile cache flushed')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.on('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`exited ${code} before its cache was flushed: ${err.trim().slice(0, 500)}`));
        });
      });
    } finally {
      child.kill('SIGKILL');
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const [cacheDir, ...bundles] = process.argv.slice(2);
if (cacheDir === undefined || bundles.length === 0) {
  process.stderr.write('usage: node scripts/compile-cache.mjs <cache dir> <bundle>...\n');
  process.exit(2);
}
// Entries of bundles built before are never read again: the directory is made anew.
// It exists even when no warm-up succeeds: the image copies it.
rmSync(cacheDir, { recursive: true, force: true });
mkdirSync(cacheDir, { recursive: true });
for (const bundle of bundles) {
  if (!existsSync(bundle)) continue;
  try {
    await warm(path.resolve(cacheDir), path.resolve(bundle));
  } catch (err) {
    process.stderr.write(`compile cache: ${bundle} not warmed (${err.message}); it starts without a cache\n`);
  }
}
