// `npm run demo`: cni-chainer on a scratch node. A primary CNI writes its configs the ways real ones
// do (a pre-existing Flannel conflist, Calico's single-plugin .conf, Cilium's symlink to a -current
// file); the agent chains linkerd-cni into each; then SIGTERM takes it all out again.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTempName } from '../src/fs/temp-names.js';
import { NativeWatcher } from '../src/watch/native.js';
import type { WatchEvent } from '../src/watch/watcher.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixtures = path.join(repo, 'test', 'fixtures');
const cli = path.join(repo, 'dist', 'cni-chainer.mjs');
const keep = process.argv.includes('--keep');

const scratch = mkdtempSync(path.join(os.tmpdir(), 'cni-chainer-demo-'));
const hostRoot = path.join(scratch, 'host');
const netDir = path.join(hostRoot, 'etc/cni/net.d');
const containerBin = path.join(scratch, 'container/opt/cni/bin');
const serviceAccount = path.join(scratch, 'container/serviceaccount');
for (const dir of [netDir, containerBin, serviceAccount]) mkdirSync(dir, { recursive: true });
writeFileSync(path.join(containerBin, 'linkerd-cni'), '#!/bin/sh\necho "linkerd-cni (demo stand-in)"\n');
chmodSync(path.join(containerBin, 'linkerd-cni'), 0o755);
writeFileSync(path.join(serviceAccount, 'token'), 'demo-token');
writeFileSync(path.join(serviceAccount, 'ca.crt'), '-----BEGIN CERTIFICATE-----\ndemo\n-----END CERTIFICATE-----\n');

const env = {
  PATH: process.env.PATH,
  CONTAINER_MOUNT_PREFIX: hostRoot,
  CONTAINER_CNI_BIN_DIR: containerBin,
  SERVICEACCOUNT_PATH: serviceAccount,
  KUBERNETES_SERVICE_HOST: '10.96.0.1',
  KUBERNETES_SERVICE_PORT: '443',
  CNI_NETWORK_CONFIG_FILE: path.join(fixtures, 'plugin/linkerd-cni.json'),
  HEALTH_PORT: '0',
};

const say = (text: string) => process.stdout.write(`${text}\n`);
const fixture = (name: string) => readFileSync(path.join(fixtures, 'conflists', name), 'utf8');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes like a primary CNI: temp file, then rename into place. Returns when the rename is done. */
function primaryWrites(file: string, text: string): bigint {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.writing`);
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  return process.hrtime.bigint();
}

function pluginTypes(file: string): string {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as { plugins?: Array<{ type: string }>; type?: string };
  return (doc.plugins ?? [doc]).map((p) => p.type).join(' → ');
}

function check(title: string): void {
  const result = spawnSync(process.execPath, [cli, 'check'], { env, encoding: 'utf8' });
  say(`\n$ cni-chainer check    # ${title}`);
  process.stdout.write(result.stdout.replace(/^/gm, '  '));
  say(`  (exit ${result.status})`);
}

// An independent observer of net.d, standing in for the container runtime: it sees the agent's
// rename of each patched file land, which is what the latency below measures.
const landed: WatchEvent[] = [];
const landedAt = new Map<WatchEvent, bigint>();
const observer = new NativeWatcher((events) => {
  const now = process.hrtime.bigint();
  // The read's events as objects, once: they are kept, and looked up by identity below.
  const kept = [...events];
  for (const e of kept) landedAt.set(e, now);
  landed.push(...kept);
});
observer.watchSync(netDir);

const agentLog: Array<{ msg: string; file?: string }> = [];

/** When the agent's own rename (from one of its temp names) of `name` landed, among events from `since`. */
function ourLanding(name: string, since: number): bigint | undefined {
  const events = landed.slice(since);
  const ours = new Set(events.filter((e) => e.kind === 'moved-out' && isTempName(e.name)).map((e) => e.cookie));
  const landing = events.find((e) => e.kind === 'moved-in' && e.name === name && ours.has(e.cookie));
  return landing === undefined ? undefined : landedAt.get(landing);
}

/** Waits until the agent's rename of `name` landed and the agent logged the change. */
async function waitForPatch(name: string, since: number, logsBefore: number, timeoutMs = 5_000): Promise<bigint> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = ourLanding(name, since);
    if (at !== undefined && agentLog.length > logsBefore) return at;
    if (Date.now() > deadline) throw new Error(`${name} was not patched within ${timeoutMs} ms`);
    await sleep(1);
  }
}

const ms = (from: bigint, to: bigint) => `${(Number(to - from) / 1e6).toFixed(2)} ms`;

async function main(): Promise<void> {
  say(`cni-chainer demo: a scratch node in ${scratch}`);
  say(`  host root  ${hostRoot}   (CONTAINER_MOUNT_PREFIX)`);
  say(`  net.d      /etc/cni/net.d  holds Flannel's config before the agent starts\n`);
  primaryWrites(path.join(netDir, '10-flannel.conflist'), fixture('10-flannel.conflist'));

  const agent = spawn(process.execPath, [cli, 'run'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let started!: () => void;
  const isStarted = new Promise<void>((resolve) => (started = resolve));
  let buffered = '';
  agent.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const entry = JSON.parse(line) as { msg: string; file?: string; files?: string[]; to?: string; target?: string };
      const detail = [entry.file, entry.files?.join(', '), entry.to && `→ ${entry.to}`, entry.target && `(target ${entry.target})`].filter(Boolean).join(' ');
      agentLog.push(entry);
      say(`  agent | ${entry.msg}${detail ? `: ${detail}` : ''}`);
      if (entry.msg === 'started') started();
    }
  });
  await isStarted;

  say('\nCalico writes a single-plugin 10-calico.conf:');
  let [mark, logs] = [landed.length, agentLog.length];
  let t0 = primaryWrites(path.join(netDir, '10-calico.conf'), fixture('10-calico.conf'));
  let t1 = await waitForPatch('10-calico.conflist', mark, logs);
  say(`  → 10-calico.conflist: ${pluginTypes(path.join(netDir, '10-calico.conflist'))}   (landed ${ms(t0, t1)} after Calico's rename)`);

  say('\nCilium writes 05-cilium.conflist-current and links 05-cilium.conflist to it:');
  primaryWrites(path.join(netDir, '05-cilium.conflist-current'), fixture('05-cilium.conflist'));
  [mark, logs] = [landed.length, agentLog.length];
  symlinkSync('05-cilium.conflist-current', path.join(netDir, '05-cilium.conflist'));
  t0 = process.hrtime.bigint();
  t1 = await waitForPatch('05-cilium.conflist-current', mark, logs);
  say(`  → 05-cilium.conflist-current: ${pluginTypes(path.join(netDir, '05-cilium.conflist-current'))}   (landed ${ms(t0, t1)} after the link)`);

  say('\nCilium restarts and rewrites its file without the plugin:');
  [mark, logs] = [landed.length, agentLog.length];
  t0 = primaryWrites(path.join(netDir, '05-cilium.conflist-current'), fixture('05-cilium.conflist'));
  t1 = await waitForPatch('05-cilium.conflist-current', mark, logs);
  say(`  → ${pluginTypes(path.join(netDir, '05-cilium.conflist-current'))} again, landed ${ms(t0, t1)} after Cilium's rename`);

  check('while the agent runs');

  say('\nSIGTERM (the DaemonSet pod is deleted):');
  const exited = new Promise<number | null>((resolve) => agent.on('close', (code) => resolve(code)));
  agent.kill('SIGTERM');
  say(`  agent exited with ${await exited}`);
  check('after the agent stopped');
  await observer.close();
  if (keep) say(`\nThe scratch node is kept in ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  process.exit(1);
});
