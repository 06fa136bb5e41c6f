// What the tests of hostile inputs (beside each behaviour in test/integration/) share: what the machine can do, and a few
// probes of files and processes.
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { NodeHost } from './node-host.js';

export const canUnshare = spawnSync('unshare', ['-Ur', 'true']).status === 0;
// A tmpfs of a few pages mounted over a test's net.d (root in the machine's own mount namespace, as
// in CI and on this project's bench machine).
export const canMount = (() => {
  const host = new NodeHost();
  const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', host.netDir]).status === 0;
  if (ok) spawnSync('umount', [host.netDir]);
  return ok;
})();

export const canChattr = (() => {
  const host = new NodeHost();
  const ok = spawnSync('chattr', ['+i', host.netDir]).status === 0;
  spawnSync('chattr', ['-i', host.netDir]);
  return ok;
})();

export function mkfifo(file: string): void {
  execFileSync('mkfifo', [file]);
}

export function temps(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.includes('.cni-chainer-'));
}

/** `count` conflists of ~1 MB each (just under MAX_CONFIG_BYTES' default) in net.d; their names. */
export function putMegabyteConfigs(host: NodeHost, count: number): string[] {
  const big = JSON.stringify({ cniVersion: '0.3.1', name: 'big', plugins: [{ type: 'bridge', pad: 'x'.repeat(1_000_000) }] });
  const names = Array.from({ length: count }, (_, i) => `c${String(i).padStart(3, '0')}.conflist`);
  for (const name of names) writeFileSync(host.net(name), big);
  return names;
}

/** Peak resident set of a live process, in MiB (VmHWM). */
export function peakRssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}
