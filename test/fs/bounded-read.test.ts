// readEntry (one call into the addon: native/entry_read.cc) against the real kernel: what it opens and
// what it never opens, the bound, and names that could leave the directory.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEntry } from '../../src/fs/bounded-read.js';
import { Dir } from '../../src/fs/dir.js';
import { addon, IN } from '../../src/native/addon.js';
import { InotifyWatcher, type RawInotifyEvent } from '../helpers/inotify.js';
import { tempDir } from '../helpers/tmp.js';
import { skipOrFail } from '../helpers/capability.js';

function inDir<T>(dir: string, fn: (d: Dir) => T): T {
  const d = Dir.open(dir);
  try {
    return fn(d);
  } finally {
    d.close();
  }
}

/** The names inotify saw opened in `dir` while `fn` ran (IN_OPEN is queued before open(2) returns). */
async function opensDuring(dir: string, fn: () => void): Promise<string[]> {
  const seen: RawInotifyEvent[] = [];
  const watcher = new InotifyWatcher(dir, IN.IN_OPEN, (events) => seen.push(...events));
  try {
    fn();
    writeFileSync(path.join(dir, 'zz-marker'), ''); // opened last: once it is seen, everything before it is
    const deadline = Date.now() + 5000;
    while (!seen.some((e) => e.name === 'zz-marker')) {
      if (Date.now() > deadline) throw new Error('no IN_OPEN for the marker');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    watcher.close();
  }
  // An empty name is the watched directory itself, which Dir.open opens.
  return seen.map((e) => e.name).filter((n) => n !== 'zz-marker' && n !== '');
}

describe('readEntry', () => {
  it('reads a regular file with its mode, owner, size and mtime', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'a.conflist'), '{"x":1}', { mode: 0o640 });
    const read = inDir(dir, (d) => readEntry(d, 'a.conflist', 1024));
    expect(read.kind).toBe('file');
    if (read.kind !== 'file') return;
    expect(read.bytes.toString()).toBe('{"x":1}');
    expect(read.stat.mode & 0o7777).toBe(0o640);
    expect(read.stat.uid).toBe(process.getuid!());
    expect(read.stat.size).toBe(7);
    expect(Math.abs(read.stat.mtimeMs - Date.now())).toBeLessThan(60_000);
  });

  it('stops at the bound: a file of maxBytes is read, one byte more is too-large', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'exact'), 'x'.repeat(100));
    writeFileSync(path.join(dir, 'over'), 'x'.repeat(101));
    inDir(dir, (d) => {
      const exact = readEntry(d, 'exact', 100);
      expect(exact.kind === 'file' && exact.bytes.length).toBe(100);
      expect(readEntry(d, 'over', 100)).toEqual({ kind: 'too-large', size: 101 });
    });
  });

  it('reports a symlink without following it, and a missing name as missing', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'target'), '{}');
    symlinkSync('target', path.join(dir, 'link'));
    symlinkSync('/dev/zero', path.join(dir, 'zero'));
    inDir(dir, (d) => {
      expect(readEntry(d, 'link', 1024)).toEqual({ kind: 'symlink' });
      expect(readEntry(d, 'zero', 1024)).toEqual({ kind: 'symlink' });
      expect(readEntry(d, 'nothing', 1024)).toEqual({ kind: 'missing' });
    });
  });

  it('never opens a FIFO, a device or a directory: reported from lstat as not-regular', async (ctx) => {
    const dir = tempDir();
    expect(spawnSync('mkfifo', [path.join(dir, 'fifo.conflist')]).status).toBe(0);
    mkdirSync(path.join(dir, 'dir.conflist'));
    // A character device (1,3 is /dev/null's numbers): needs CAP_MKNOD, which CI has as root.
    const device = spawnSync('mknod', [path.join(dir, 'dev.conflist'), 'c', '1', '3']).status === 0;
    if (!device) skipOrFail(ctx, 'mknod (CAP_MKNOD)');
    const opened = await opensDuring(dir, () =>
      inDir(dir, (d) => {
        for (const name of ['fifo.conflist', 'dev.conflist', 'dir.conflist']) expect(readEntry(d, name, 1024).kind, name).toBe('not-regular');
      }),
    );
    expect(opened).toEqual([]);
  });

  it('opens a regular file once, and reads its xattrs only when asked', async (ctx) => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'f'), '{}');
    if (spawnSync('setfattr', ['-n', 'user.test', '-v', 'yes', path.join(dir, 'f')]).status !== 0) skipOrFail(ctx, 'setfattr (Debian attr)');
    let withXattrs: ReturnType<typeof readEntry> | undefined;
    const opened = await opensDuring(dir, () => inDir(dir, (d) => (withXattrs = readEntry(d, 'f', 1024, { xattrs: true }))));
    expect(opened).toEqual(['f']);
    expect(withXattrs?.kind === 'file' && withXattrs.xattrs.map(([k, v]) => [k, v.toString()])).toEqual([['user.test', 'yes']]);
    const without = inDir(dir, (d) => readEntry(d, 'f', 1024));
    expect(without.kind === 'file' && without.xattrs).toEqual([]);
  });

  it('reads one file after another through its one result column, each read its own', () => {
    // The addon writes what it found into a column readEntry reuses (fs/bounded-read.ts): a read must
    // not keep anything of the one before, whatever kind that was.
    const dir = tempDir();
    writeFileSync(path.join(dir, 'a'), '{"a":1}', { mode: 0o640 });
    writeFileSync(path.join(dir, 'big'), 'x'.repeat(100));
    symlinkSync('a', path.join(dir, 'link'));
    inDir(dir, (d) => {
      const a = readEntry(d, 'a', 1024);
      expect(readEntry(d, 'big', 10)).toEqual({ kind: 'too-large', size: 100 });
      expect(readEntry(d, 'link', 1024)).toEqual({ kind: 'symlink' });
      const again = readEntry(d, 'a', 1024);
      expect(a.kind === 'file' && [a.bytes.toString(), a.stat.mode & 0o777]).toEqual(['{"a":1}', 0o640]);
      expect(again).toEqual(a);
    });
  });

  it('is given a result column of seven numbers and an array for the xattrs, or throws a TypeError', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'f'), '{}');
    inDir(dir, (d) => {
      expect(() => addon.readEntryAt(d.fd, 'f', 1024, false, new Float64Array(6), [])).toThrow(TypeError);
      expect(() => addon.readEntryAt(d.fd, 'f', 1024, false, new Int32Array(7) as unknown as Float64Array, [])).toThrow(TypeError);
      expect(() => addon.readEntryAt(d.fd, 'f', 1024, false, new Float64Array(7), undefined as unknown as [])).toThrow(TypeError);
      const out = new Float64Array(7);
      expect(addon.readEntryAt(d.fd, 'f', 1024, false, out, [])?.subarray(0, out[6]).toString()).toBe('{}');
    });
  });

  it('refuses names that are not one entry of the directory', () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'sub'));
    writeFileSync(path.join(dir, 'sub', 'f'), '{}');
    inDir(dir, (d) => {
      for (const name of ['sub/f', '..', '.', '']) expect(() => readEntry(d, name, 1024), name).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    });
  });
});
