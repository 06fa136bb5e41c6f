// SharedDir: overlapping uses share one fd, which is closed as soon as the last one is done (an fd
// held while idle would keep a deleted net.d alive and hide its IN_DELETE_SELF); a retired handle is
// never closed under a running use.
import { fstatSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { SharedDir } from '../../src/fs/shared-dir.js';
import { tempDir } from '../helpers/tmp.js';

function isOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe('SharedDir', () => {
  it('opens once for overlapping uses and closes when the last one ends', async () => {
    const dir = tempDir();
    let opens = 0;
    const shared = new SharedDir(() => {
      opens++;
      return Dir.open(dir);
    });
    const g = gate();
    const fds: number[] = [];
    const uses = [1, 2, 3].map(() => shared.use(async (d) => (fds.push(d.fd), await g.wait)));
    await Promise.resolve();
    expect(opens).toBe(1);
    expect(new Set(fds).size).toBe(1);
    expect(isOpen(fds[0]!)).toBe(true);
    g.open();
    await Promise.all(uses);
    expect(isOpen(fds[0]!)).toBe(false);
    await shared.use(async () => {});
    expect(opens).toBe(2);
  });

  it('closes after a use that throws, and passes the error on', async () => {
    const dir = tempDir();
    let fd = -1;
    const shared = new SharedDir(() => Dir.open(dir));
    await expect(shared.use(async (d) => ((fd = d.fd), Promise.reject(new Error('boom'))))).rejects.toThrow('boom');
    expect(isOpen(fd)).toBe(false);
  });

  it('after retire, new uses get a new fd; the old one stays open until its own uses end', async () => {
    const dir = tempDir();
    const shared = new SharedDir(() => Dir.open(dir));
    const g = gate();
    let oldFd = -1;
    const old = shared.use(async (d) => ((oldFd = d.fd), await g.wait));
    await Promise.resolve();
    shared.retire();
    let newFd = -1;
    const fresh = shared.use(async (d) => {
      newFd = d.fd;
      expect(isOpen(oldFd)).toBe(true);
    });
    await fresh;
    expect(newFd).not.toBe(oldFd);
    expect(isOpen(oldFd)).toBe(true);
    g.open();
    await old;
    expect(isOpen(oldFd)).toBe(false);
  });
});
