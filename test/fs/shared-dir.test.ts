// SharedDir: overlapping leases share one fd, which is closed as soon as the last one is released (an fd
// held while idle would keep a deleted net.d alive and hide its IN_DELETE_SELF); a retired handle is
// never closed under a lease still held.
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

describe('SharedDir', () => {
  it('opens once for overlapping leases and closes when the last one is released', () => {
    const dir = tempDir();
    let opens = 0;
    const shared = new SharedDir(() => {
      opens++;
      return Dir.open(dir);
    });
    const leases = [1, 2, 3].map(() => shared.acquire());
    expect(opens).toBe(1);
    expect(new Set(leases.map((l) => l.dir.fd)).size).toBe(1);
    const fd = leases[0]!.dir.fd;
    shared.release(leases[0]!);
    shared.release(leases[1]!);
    expect(isOpen(fd)).toBe(true);
    shared.release(leases[2]!);
    expect(isOpen(fd)).toBe(false);
    shared.release(shared.acquire());
    expect(opens).toBe(2);
  });

  it('passes on what open throws, and holds nothing after it', () => {
    let fail = true;
    const dir = tempDir();
    const shared = new SharedDir(() => {
      if (fail) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
      return Dir.open(dir);
    });
    expect(() => shared.acquire()).toThrow('gone');
    fail = false;
    const lease = shared.acquire();
    expect(isOpen(lease.dir.fd)).toBe(true);
    shared.release(lease);
    expect(isOpen(lease.dir.fd)).toBe(false);
  });

  it('after retire, new leases get a new fd; the old one stays open until its own leases are released', () => {
    const dir = tempDir();
    const shared = new SharedDir(() => Dir.open(dir));
    const old = shared.acquire();
    const oldFd = old.dir.fd;
    shared.retire();
    const fresh = shared.acquire();
    expect(fresh.dir.fd).not.toBe(oldFd);
    expect(isOpen(oldFd)).toBe(true);
    shared.release(fresh);
    expect(isOpen(oldFd)).toBe(true);
    shared.release(old);
    expect(isOpen(oldFd)).toBe(false);
  });
});
