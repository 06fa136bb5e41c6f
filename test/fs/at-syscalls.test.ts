// The addon's *at syscalls against the real kernel: renameat2, openat2, and the calls relative to a
// directory fd (src/native/fs-calls.ts is their facade).
import { closeSync, constants, mkdirSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addon, IN, SYSCALL } from '../../src/native/addon.js';
import { tempDir } from '../helpers/tmp.js';

describe('the *at syscalls', () => {
  it('renameat2 swaps two files with RENAME_EXCHANGE and refuses to replace with RENAME_NOREPLACE', () => {
    const dir = tempDir();
    const [a, b] = [path.join(dir, 'a'), path.join(dir, 'b')];
    writeFileSync(a, 'A');
    writeFileSync(b, 'B');
    addon.renameat2(SYSCALL.AT_FDCWD, a, SYSCALL.AT_FDCWD, b, SYSCALL.RENAME_EXCHANGE);
    expect([readFileSync(a, 'utf8'), readFileSync(b, 'utf8')]).toEqual(['B', 'A']);
    expect(() => addon.renameat2(SYSCALL.AT_FDCWD, a, SYSCALL.AT_FDCWD, b, SYSCALL.RENAME_NOREPLACE)).toThrow(
      expect.objectContaining({ code: 'EEXIST', syscall: 'renameat2', path: a, dest: b }),
    );
    addon.renameat2(SYSCALL.AT_FDCWD, a, SYSCALL.AT_FDCWD, path.join(dir, 'c'), SYSCALL.RENAME_NOREPLACE);
    expect(readFileSync(path.join(dir, 'c'), 'utf8')).toBe('B');
  });

  it('openat2 RESOLVE_IN_ROOT keeps absolute links and .. inside the root; RESOLVE_NO_SYMLINKS refuses links', () => {
    const root = tempDir();
    const outside = tempDir();
    writeFileSync(path.join(outside, 'secret'), 'outside');
    mkdirSync(path.join(root, 'etc'));
    writeFileSync(path.join(root, 'etc', 'x'), 'inside');
    symlinkSync(path.join(outside, 'secret'), path.join(root, 'abs')); // absolute: means <root>/<outside>/secret
    symlinkSync('../../../../../../etc/x', path.join(root, 'up'));
    const rootFd = openSync(root, 'r');
    try {
      expect(() => addon.openat2(rootFd, 'abs', constants.O_RDONLY, 0, SYSCALL.RESOLVE_IN_ROOT)).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'openat2' }));
      const fd = addon.openat2(rootFd, 'up', constants.O_RDONLY, 0, SYSCALL.RESOLVE_IN_ROOT);
      expect(readFileSync(fd, 'utf8')).toBe('inside');
      closeSync(fd);
      expect(() => addon.openat2(rootFd, 'up', constants.O_RDONLY, 0, SYSCALL.RESOLVE_BENEATH | SYSCALL.RESOLVE_NO_SYMLINKS)).toThrow(expect.objectContaining({ code: 'ELOOP' }));
    } finally {
      closeSync(rootFd);
    }
  });

  it('unlinkat, symlinkat, readlinkat and the xattr calls work relative to a directory fd', () => {
    const dir = tempDir();
    const fd = openSync(dir, 'r');
    try {
      addon.symlinkat('target', fd, 'link');
      expect(addon.readlinkat(fd, 'link')).toBe('target');
      addon.unlinkat(fd, 'link', 0);
      expect(() => addon.readlinkat(fd, 'link')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    } finally {
      closeSync(fd);
    }
    const file = path.join(dir, 'f');
    writeFileSync(file, 'x');
    const ffd = openSync(file, 'r');
    try {
      addon.fsetxattr(ffd, 'user.k', Buffer.from('v'));
      expect(addon.xattrs(ffd)).toEqual([['user.k', Buffer.from('v')]]);
    } finally {
      closeSync(ffd);
    }
  });

  it('exports frozen constants', () => {
    expect(Object.isFrozen(IN)).toBe(true);
    expect(IN.IN_CREATE).toBe(0x100);
    expect(IN.IN_Q_OVERFLOW).toBe(0x4000);
  });
});
