import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const made: string[] = [];

/** A fresh directory removed after the current test. */
export function tempDir(prefix = 'cni-chainer-test-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh directory on tmpfs (/dev/shm), removed after the current test, where replacements run on
 * the event loop (fs/memory-backed.ts); undefined where the machine has no tmpfs there.
 */
export function tmpfsDir(prefix = 'cni-chainer-test-'): string | undefined {
  if (!hasTmpfs()) return undefined;
  const dir = mkdtempSync(path.join('/dev/shm', prefix));
  made.push(dir);
  return dir;
}

/** True when `dir` is on tmpfs, as coreutils' stat reads statfs(2) (an oracle apart from the addon's). */
export function isTmpfs(dir: string): boolean {
  return execFileSync('stat', ['-f', '--format=%T', dir], { encoding: 'utf8' }).trim() === 'tmpfs';
}

/** True when /dev/shm is a tmpfs, as on every Linux machine with systemd or a container runtime. */
export function hasTmpfs(): boolean {
  return existsSync('/dev/shm') && isTmpfs('/dev/shm');
}
