// Replacements go to libuv's pool at the end of the loop turn, together, or at once when the caller
// says the turn has nothing more to add (fs/replace-batches.ts). The real addon and pool: a file lands
// only once its job is on a pool thread.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { promised } from '../../src/done.js';
import { flushReplacements, LANDING, ON_LOOP_AT_MOST, replaceEntryThen, type Replacement } from '../../src/fs/replace-batches.js';
import { tempNameFor } from '../../src/fs/temp-names.js';
import { repoRoot } from '../helpers/addon-path.js';
import { runProcess } from '../helpers/run-node.js';
import { hasTmpfs, tempDir, tmpfsDir } from '../helpers/tmp.js';
import { itWith } from '../helpers/capability.js';

function replacement(dir: Dir, name: string, text: string): Replacement {
  return { dirfd: dir.fd, tmp: tempNameFor(name), name, bytes: Buffer.from(text), mode: 0o644, uid: -1, gid: -1, xattrs: [], landing: LANDING.rename, expect: undefined };
}

/** Spins on the main thread (no event-loop turn) until `file` exists, or `ms` have passed. */
function appearsWithoutATurn(file: string, ms: number): boolean {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) if (existsSync(file)) return true;
  return false;
}

describe('replacement batches', () => {
  it('sends a turn\'s replacements to the pool only at its end, unless flushed: then at once', async () => {
    const root = tempDir();
    const dir = Dir.open(root);
    try {
      const waiting = promised((done) => replaceEntryThen(replacement(dir, 'a.conflist', 'a'), 'device', done));
      // Not on the pool yet: the turn has not ended.
      expect(appearsWithoutATurn(path.join(root, 'a.conflist'), 300)).toBe(false);
      await expect(waiting).resolves.toBe('renamed');

      const flushed = promised((done) => replaceEntryThen(replacement(dir, 'b.conflist', 'b'), 'device', done));
      flushReplacements();
      // On a pool thread now, while this thread has not left the turn.
      expect(appearsWithoutATurn(path.join(root, 'b.conflist'), 5_000)).toBe(true);
      await expect(flushed).resolves.toBe('renamed');
      expect(readFileSync(path.join(root, 'b.conflist'), 'utf8')).toBe('b');
      // The turn's own flush finds nothing left, and a flush of nothing sends nothing.
      flushReplacements();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      dir.close();
    }
  });
});

describe('replacements on a memory-backed filesystem (tmpfs)', () => {
  const it = itWith(hasTmpfs(), 'tmpfs at /dev/shm');

  // In a process of its own with one pool thread, held by a read of a FIFO nobody writes (its
  // open(2) blocks): what lands meanwhile landed on the event loop.
  it(`lands up to ${ON_LOOP_AT_MOST} on the event loop while the pool is held, tells them after a timer, and sends more to the pool`, async () => {
    const root = tmpfsDir()!;
    execFileSync('mkfifo', [path.join(root, 'held.fifo')]);
    const built = (file: string) => JSON.stringify(path.join(repoRoot, 'dist', 'src', 'fs', file));
    const script = `
      const fs = await import('node:fs');
      const { Dir } = await import(${built('dir.js')});
      const { LANDING, ON_LOOP_AT_MOST, flushReplacements, replaceEntryThen } = await import(${built('replace-batches.js')});
      const { tempNameFor } = await import(${built('temp-names.js')});
      const root = ${JSON.stringify(root)};
      const held = fs.promises.readFile(root + '/held.fifo');
      await new Promise((resolve) => setTimeout(resolve, 200));
      const dir = Dir.open(root);
      const heard = [];
      const ask = (name) => replaceEntryThen({ dirfd: dir.fd, tmp: tempNameFor(name), name, bytes: Buffer.from(name), mode: 0o644, uid: -1, gid: -1, xattrs: [], landing: LANDING.rename, expect: undefined }, 'memory', (error, result) => heard.push(name + ': ' + (result ?? error.code)));
      const few = Array.from({ length: ON_LOOP_AT_MOST }, (_, i) => 'few' + i + '.conflist');
      few.forEach(ask);
      flushReplacements();
      const fewLanded = few.filter((name) => fs.existsSync(root + '/' + name)).length;
      const heardInFlush = heard.length;
      const many = Array.from({ length: ON_LOOP_AT_MOST + 1 }, (_, i) => 'many' + i + '.conflist');
      many.forEach(ask);
      flushReplacements();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const manyLandedWhileHeld = many.filter((name) => fs.existsSync(root + '/' + name)).length;
      fs.closeSync(fs.openSync(root + '/held.fifo', 'w'));
      await held;
      await new Promise((resolve) => setTimeout(resolve, 300));
      console.log(JSON.stringify({ fewLanded, heardInFlush, manyLandedWhileHeld, heard: heard.sort() }));`;
    const result = await runProcess(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, UV_THREADPOOL_SIZE: '1' } });
    expect(result.code, result.stderr).toBe(0);
    const seen = JSON.parse(result.stdout) as { fewLanded: number; heardInFlush: number; manyLandedWhileHeld: number; heard: string[] };
    const names = [...Array.from({ length: ON_LOOP_AT_MOST }, (_, i) => `few${i}.conflist`), ...Array.from({ length: ON_LOOP_AT_MOST + 1 }, (_, i) => `many${i}.conflist`)];
    expect(seen).toEqual({ fewLanded: ON_LOOP_AT_MOST, heardInFlush: 0, manyLandedWhileHeld: 0, heard: names.map((name) => `${name}: renamed`).sort() });
    for (const name of names) expect(readFileSync(path.join(root, name), 'utf8')).toBe(name);
  });

  it('tells a failed replacement its error on the loop too, and the others land', async () => {
    const root = tmpfsDir()!;
    const dir = Dir.open(root);
    try {
      mkdirSync(path.join(root, 'a-dir.conflist', 'child'), { recursive: true });
      const failing = promised((done) => replaceEntryThen(replacement(dir, 'a-dir.conflist', 'x'), 'memory', done));
      const landing = promised((done) => replaceEntryThen(replacement(dir, 'b.conflist', 'b'), 'memory', done));
      flushReplacements();
      await expect(failing).rejects.toMatchObject({ code: expect.stringMatching(/EISDIR|ENOTEMPTY|EEXIST/) });
      await expect(landing).resolves.toBe('renamed');
      expect(readdirSync(root).sort()).toEqual(['a-dir.conflist', 'b.conflist']);
    } finally {
      dir.close();
    }
  });
});

describe('replacement callbacks', () => {
  // A pass hears how its write ended from the batch's completion (daemon/keepers/reconciler.ts): a
  // defect that throws in one callback must not leave the batch's other passes waiting for ever. In a
  // process of its own (one pool thread, so both are one batch), where the throw is uncaught.
  it('tells every replacement of a batch how it ended, even after one callback throws', async () => {
    const root = tempDir();
    const built = (file: string) => JSON.stringify(path.join(repoRoot, 'dist', 'src', 'fs', file));
    const script = `
      const { Dir } = await import(${built('dir.js')});
      const { LANDING, flushReplacements, replaceEntryThen } = await import(${built('replace-batches.js')});
      const { tempNameFor } = await import(${built('temp-names.js')});
      const heard = [];
      process.on('uncaughtException', (err) => heard.push('uncaught: ' + err.message));
      const dir = Dir.open(${JSON.stringify(root)});
      const job = (name) => ({ dirfd: dir.fd, tmp: tempNameFor(name), name, bytes: Buffer.from(name), mode: 0o644, uid: -1, gid: -1, xattrs: [], landing: LANDING.rename, expect: undefined });
      replaceEntryThen(job('a.conflist'), 'device', (error, result) => {
        heard.push('a: ' + result);
        throw new Error('a defect');
      });
      replaceEntryThen(job('b.conflist'), 'device', (error, result) => heard.push('b: ' + result));
      flushReplacements();
      setTimeout(() => console.log(JSON.stringify(heard)), 1000);`;
    const result = await runProcess(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, UV_THREADPOOL_SIZE: '1' } });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(['a: renamed', 'b: renamed', 'uncaught: a defect']);
    expect(readFileSync(path.join(root, 'b.conflist'), 'utf8')).toBe('b.conflist');
  });
});
