import { closeSync, constants, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HostRoot } from '../../src/fs/host-root.js';
import { MAX_LOOKUPS, resolveInRoot, type Entry, type Lookup } from '../../src/fs/resolve-in-root.js';
import { addon, SYSCALL } from '../../src/native/addon.js';
import { tempDir } from '../helpers/tmp.js';

/** An in-memory tree: host path → entry. Directories are implied by their children. */
function tree(entries: Record<string, Entry>): Lookup {
  return (p) => {
    if (entries[p] !== undefined) return entries[p]!;
    if (Object.keys(entries).some((k) => k.startsWith(`${p}/`))) return { kind: 'dir' };
    return { kind: 'missing' };
  };
}

const file: Entry = { kind: 'file' };
const link = (target: string): Entry => ({ kind: 'symlink', target });

describe('resolveInRoot', () => {
  it('follows a relative link in the same directory (Cilium write-cni-conf-when-ready)', () => {
    const fs = tree({ '/etc/cni/net.d/05-cilium.conflist': link('05-cilium.conflist-current'), '/etc/cni/net.d/05-cilium.conflist-current': file });
    expect(resolveInRoot('/etc/cni/net.d/05-cilium.conflist', fs)).toEqual({ ok: true, path: '/etc/cni/net.d/05-cilium.conflist-current', kind: 'file', links: 1 });
  });

  it('restarts an absolute target at the host root', () => {
    const fs = tree({ '/etc/cni/net.d/10-oke.conflist': link('/var/lib/oke/cni.conflist'), '/var/lib/oke/cni.conflist': file });
    expect(resolveInRoot('/etc/cni/net.d/10-oke.conflist', fs)).toMatchObject({ ok: true, path: '/var/lib/oke/cni.conflist' });
  });

  it('clamps .. at the root: a link cannot climb out', () => {
    const fs = tree({ '/etc/cni/net.d/x.conflist': link('../../../../../../etc/passwd'), '/etc/passwd': file });
    expect(resolveInRoot('/etc/cni/net.d/x.conflist', fs)).toMatchObject({ ok: true, path: '/etc/passwd' });
    expect(resolveInRoot('/../../etc/passwd', fs)).toMatchObject({ ok: true, path: '/etc/passwd' });
  });

  it('resolves links in intermediate directories', () => {
    const fs = tree({ '/etc/cni/net.d/a.conflist': link('../conf/real.conflist'), '/etc/cni/conf': link('/opt/conf'), '/opt/conf/real.conflist': file });
    expect(resolveInRoot('/etc/cni/net.d/a.conflist', fs)).toMatchObject({ ok: true, path: '/opt/conf/real.conflist', links: 2 });
  });

  it('applies .. after a link to the link target, as the kernel does', () => {
    const fs = tree({ '/a/l': link('/b/c'), '/b/c/x': file, '/a/x': file, '/b/x': file });
    expect(resolveInRoot('/a/l/../x', fs)).toMatchObject({ ok: true, path: '/b/x' });
  });

  it('reports ELOOP for a cycle and for a self-link', () => {
    expect(resolveInRoot('/n/a', tree({ '/n/a': link('b'), '/n/b': link('a') }))).toMatchObject({ ok: false, code: 'ELOOP' });
    expect(resolveInRoot('/n/a', tree({ '/n/a': link('a') }))).toMatchObject({ ok: false, code: 'ELOOP' });
  });

  it('follows 40 links and refuses the 41st', () => {
    const entries: Record<string, Entry> = { '/n/l40': file };
    for (let i = 0; i < 40; i++) entries[`/n/l${i}`] = link(`l${i + 1}`);
    expect(resolveInRoot('/n/l0', tree(entries))).toMatchObject({ ok: true, path: '/n/l40', links: 40 });
    entries['/n/l40'] = link('l41');
    entries['/n/l41'] = file;
    expect(resolveInRoot('/n/l0', tree(entries))).toMatchObject({ ok: false, code: 'ELOOP' });
  });

  it('gives up as ELOOP after MAX_LOOKUPS components, however long the links the kernel would take', () => {
    // 40 hops of ~4 KB each (`d/../` again and again): some 32,000 lookups to the kernel, allowed.
    const hop = (n: number) => `${'d/../'.repeat(800)}h${n}`;
    const entries: Record<string, Entry> = { '/n/d/x': file, '/n/h40': file };
    for (let n = 0; n < 40; n++) entries[`/n/h${n}`] = link(hop(n + 1));
    let lookups = 0;
    const counted: Lookup = (p) => {
      lookups++;
      return tree(entries)(p);
    };
    const result = resolveInRoot('/n/h0', counted);
    expect(result).toMatchObject({ ok: false, code: 'ELOOP' });
    expect(lookups).toBeLessThanOrEqual(MAX_LOOKUPS);
    // The same chain, short: resolved.
    expect(resolveInRoot('/n/h0', tree({ '/n/h0': link('h1'), '/n/h1': file }))).toMatchObject({ ok: true, path: '/n/h1' });
  });

  it('names the first missing path of a dangling link', () => {
    const fs = tree({ '/etc/cni/net.d/a.conflist': link('/var/run/cni/ready/a.conflist'), '/var/run/x': file });
    expect(resolveInRoot('/etc/cni/net.d/a.conflist', fs)).toEqual({ ok: false, code: 'ENOENT', path: '/var/run/cni', links: 1 });
  });

  it('reports ENOTDIR when a file is used as a directory', () => {
    expect(resolveInRoot('/a/f/x', tree({ '/a/f': file }))).toMatchObject({ ok: false, code: 'ENOTDIR' });
  });

  it('reports directories and other entries as such', () => {
    expect(resolveInRoot('/a', tree({ '/a/b': file }))).toMatchObject({ ok: true, kind: 'dir' });
    expect(resolveInRoot('/s', tree({ '/s': { kind: 'other' } }))).toMatchObject({ ok: true, kind: 'other' });
  });

  it('never yields a path with . or .. components, whatever the links say', () => {
    const component = fc.constantFrom('a', 'b', '..', '.', '');
    const target = fc.array(component, { maxLength: 5 }).map((c) => c.join('/'));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('/a', '/b', '/a/a', '/a/b', '/b/a'), fc.oneof(fc.constant(file), target.map(link), target.map((t) => link(`/${t}`)))), target, (entries, query) => {
        const r = resolveInRoot(`/${query}`, tree(entries));
        expect(r.path.startsWith('/')).toBe(true);
        expect(r.path.split('/').slice(1).every((c) => c !== '..' && c !== '.')).toBe(true);
        expect(path.posix.normalize(r.path)).toBe(r.path);
      }),
    );
  });
});

/** Where the kernel resolves `rel` inside `dir` as a root (openat2 RESOLVE_IN_ROOT), or its error code. */
function kernelInRoot(dir: string, rel: string): string | { code: string } {
  const rootFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const fd = addon.openat2(rootFd, rel, SYSCALL.O_PATH, 0, SYSCALL.RESOLVE_IN_ROOT | SYSCALL.RESOLVE_NO_MAGICLINKS);
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    return { code: (err as NodeJS.ErrnoException).code ?? 'UNKNOWN' };
  } finally {
    closeSync(rootFd);
  }
}

describe('HostRoot on a real tree', () => {
  it('agrees with the kernel (realpath) wherever the kernel stays inside the root', () => {
    const names = ['a', 'b', 'c'];
    const relTarget = fc.array(fc.constantFrom('a', 'b', 'c', '..', '.'), { minLength: 1, maxLength: 4 }).map((c) => c.join('/'));
    const entry = fc.record({
      at: fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }),
      kind: fc.constantFrom('dir', 'file', 'link'),
      target: relTarget,
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 4 }), (entries, query) => {
        const dir = realpathSync(tempDir());
        for (const e of entries) {
          const p = path.join(dir, ...e.at);
          try {
            if (e.kind === 'dir') mkdirSync(p);
            else if (e.kind === 'file') writeFileSync(p, '');
            else symlinkSync(e.target, p);
          } catch {
            // parent missing or name taken: the tree is simply smaller
          }
        }
        const root = new HostRoot(dir);
        const ours = root.resolve(`/${query.join('/')}`);
        // The confinement oracle, for every case (a link that climbs out with `..` or an absolute
        // target included): the kernel's own resolution inside the root, openat2(RESOLVE_IN_ROOT).
        const inRoot = kernelInRoot(dir, query.join('/'));
        if (typeof inRoot === 'string') {
          expect(ours.ok, `kernel in root: ${inRoot}`).toBe(true);
          expect(root.toDisk(ours.path)).toBe(inRoot);
        } else {
          expect(ours.ok ? 'ok' : ours.code).toBe(inRoot.code);
        }
        let kernel: string | undefined;
        try {
          // The kernel's own resolution (libc realpath); Node's JavaScript realpathSync can spin
          // forever on some link loops that climb out of the directory.
          kernel = realpathSync.native(path.join(dir, ...query));
        } catch (err) {
          // With `..` in a link the kernel may have failed outside the root, where we never go.
          if (entries.some((e) => e.kind === 'link' && e.target.includes('..'))) return;
          const code = (err as NodeJS.ErrnoException).code;
          expect(ours.ok ? 'ok' : ours.code, `kernel says ${code}`).toBe(code);
          return;
        }
        if (kernel !== dir && !kernel.startsWith(`${dir}/`)) return; // the kernel left the root; we never do
        expect(ours.ok).toBe(true);
        expect(root.toDisk(ours.path)).toBe(kernel);
        expect(lstatSync(kernel).isSymbolicLink()).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('maps absolute targets into the root and never outside it', () => {
    const dir = realpathSync(tempDir());
    mkdirSync(path.join(dir, 'etc/cni/net.d'), { recursive: true });
    writeFileSync(path.join(dir, 'etc/passwd'), 'inside');
    symlinkSync('/etc/passwd', path.join(dir, 'etc/cni/net.d/abs.conflist'));
    symlinkSync('../../../../../../../etc/passwd', path.join(dir, 'etc/cni/net.d/dots.conflist'));
    const root = new HostRoot(dir);
    for (const name of ['abs.conflist', 'dots.conflist']) {
      const r = root.resolve(`/etc/cni/net.d/${name}`);
      expect(r).toMatchObject({ ok: true, path: '/etc/passwd' });
      expect(root.toDisk((r as { path: string }).path)).toBe(path.join(dir, 'etc/passwd'));
    }
  });
});

describe('HostRoot.lstat', () => {
  it('stats the entry the kernel finds inside the root: links on the way mean the host\'s, the last one is not followed', () => {
    const dir = realpathSync(tempDir());
    mkdirSync(path.join(dir, 'data/cni/bin'), { recursive: true });
    mkdirSync(path.join(dir, 'opt'));
    writeFileSync(path.join(dir, 'data/cni/bin/linkerd-cni'), 'inside');
    // An absolute link on the way: the host's /data, never the container's.
    symlinkSync('/data/cni', path.join(dir, 'opt/cni'));
    symlinkSync('linkerd-cni', path.join(dir, 'data/cni/bin/link'));
    const root = new HostRoot(dir);
    const st = root.lstat('/opt/cni/bin/linkerd-cni');
    expect(st?.isFile()).toBe(true);
    expect(st?.ino).toBe(lstatSync(path.join(dir, 'data/cni/bin/linkerd-cni')).ino);
    expect(root.lstat('/opt/cni/bin/link')?.isSymbolicLink()).toBe(true);
    expect(root.lstat('/opt/cni/bin/missing')).toBeUndefined();
    expect(root.lstat('/opt/cni/bin/linkerd-cni/under-a-file')).toBeUndefined();
    // A link that climbs out lands on the root's own entry, never the container's /etc/hostname.
    symlinkSync('../../../../../../../etc', path.join(dir, 'opt/etc'));
    expect(root.lstat('/opt/etc/hostname')).toBeUndefined();
  });
});

describe('resolveInRoot: loops through the root', () => {
  it('ends with ELOOP for a link that climbs to the root and back to itself', () => {
    const fs = tree({ '/a': link('../././..'), '/c': link('a/../c') });
    expect(resolveInRoot('/c', fs)).toMatchObject({ ok: false, code: 'ELOOP' });
  });
});

describe('resolveInRoot: trailing . and /', () => {
  it('treats file/. and file/ as ENOTDIR, as the kernel does', () => {
    const fs = tree({ '/n/c': file, '/n/b': link('c/.'), '/n/d': link('c/') });
    expect(resolveInRoot('/n/b', fs)).toMatchObject({ ok: false, code: 'ENOTDIR' });
    expect(resolveInRoot('/n/d', fs)).toMatchObject({ ok: false, code: 'ENOTDIR' });
    expect(resolveInRoot('/n/./c', fs)).toMatchObject({ ok: true, path: '/n/c', kind: 'file' });
    expect(resolveInRoot('/n/', fs)).toMatchObject({ ok: true, path: '/n', kind: 'dir' });
  });
});
