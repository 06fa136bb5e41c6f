// SharedDir: the leases of a burst share one fd, closed once it has been unused for IDLE_CLOSE_MS (an
// fd held while idle would keep a deleted net.d alive and hide its IN_DELETE_SELF), or at once when
// retired; a retired handle is never closed under a lease still held.
import { fstatSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { IDLE_CLOSE_MS, SharedDir } from '../../src/fs/shared-dir.js';
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
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('opens once for the leases of a burst, and closes once unused for IDLE_CLOSE_MS', () => {
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
    // The next wave of the burst reuses it.
    expect(isOpen(fd)).toBe(true);
    const next = shared.acquire();
    expect(next.dir.fd).toBe(fd);
    vi.advanceTimersByTime(IDLE_CLOSE_MS);
    expect(isOpen(fd)).toBe(true); // in use when the timer fired
    shared.release(next);
    vi.advanceTimersByTime(IDLE_CLOSE_MS - 1);
    expect(isOpen(fd)).toBe(true);
    vi.advanceTimersByTime(1);
    expect(isOpen(fd)).toBe(false);
    expect(opens).toBe(1);
    shared.release(shared.acquire());
    expect(opens).toBe(2);
  });

  it('closes an unused fd at once when retired', () => {
    const shared = new SharedDir(() => Dir.open(tempDir()));
    const lease = shared.acquire();
    shared.release(lease);
    expect(isOpen(lease.dir.fd)).toBe(true);
    shared.retire();
    expect(isOpen(lease.dir.fd)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
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
    vi.advanceTimersByTime(IDLE_CLOSE_MS);
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
