import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePlugin } from '../../src/cni/chained-plugin.js';
import { planPatch } from '../../src/cni/conflist.js';
import { NAME_MAX } from '../../src/fs/temp-names.js';
import { writeFileAtomic as writeAt } from '../../src/fs/atomic-write.js';
import { unlinkIfUnchanged } from '../../src/fs/stepwise-write.js';
import type { AtomicWriteOptions } from '../../src/fs/write-options.js';
import { touchSymlink } from '../../src/fs/touch-symlink.js';
import { Dir } from '../../src/fs/dir.js';
import { addon } from '../../src/native/addon.js';
import { pluginText } from '../helpers/fixtures.js';
import { hasTmpfs, isTmpfs, tempDir, tmpfsDir } from '../helpers/tmp.js';
import { itWith, skipOrFail } from '../helpers/capability.js';

/** The writer relative to `file`'s directory, opened for the call. */
async function writeFileAtomic(file: string, data: string | Buffer, options: AtomicWriteOptions) {
  const dir = Dir.open(path.dirname(file));
  try {
    return await writeAt(dir, path.basename(file), data, options);
  } finally {
    dir.close();
  }
}

function readXattrs(file: string): Array<[string, Buffer]> {
  const fd = openSync(file, 'r');
  try {
    return addon.xattrs(fd).sort(([a], [b]) => (a < b ? -1 : 1));
  } finally {
    closeSync(fd);
  }
}

/** Scheduling policy of each thread of this process (sched(7): 0 SCHED_OTHER, 3 SCHED_BATCH). */
function threadPolicies(): Array<{ tid: number; policy: number }> {
  return readdirSync('/proc/self/task').map((tid) => ({
    tid: Number(tid),
    policy: Number(/^policy\s*:\s*(\d+)/m.exec(readFileSync(`/proc/self/task/${tid}/sched`, 'utf8'))![1]),
  }));
}

describe('writeFileAtomic on the pool', () => {
  it('runs on a pool thread that gives up wakeup preemption (SCHED_BATCH); the event loop keeps its policy', async () => {
    const dir = tempDir();
    // As many writes at once as the pool has threads, so that each thread runs a batch.
    await Promise.all(Array.from({ length: 16 }, (_, i) => writeFileAtomic(path.join(dir, `f${i}`), 'x', { mode: 0o644 })));
    const policies = threadPolicies();
    expect(policies.find((t) => t.tid === process.pid)?.policy).toBe(0);
    expect(policies.filter((t) => t.policy === 3).length).toBeGreaterThan(0);
  });
});

// Every rule of a write holds wherever it runs: on the pool (a disk, where fsync waits for it), and on
// the event loop (tmpfs, fs/memory-backed.ts).
const disk = { label: 'a disk (on the pool)', available: !isTmpfs(os.tmpdir()), root: () => tempDir() };
const tmpfs = { label: 'tmpfs (on the event loop)', available: hasTmpfs(), root: () => tmpfsDir()! };
describe.each([disk, tmpfs])('writeFileAtomic on $label', ({ label, available, root }) => {
  const it = itWith(available, label);
  const tempDir = root;

  it('runs where its filesystem says: on the loop for tmpfs, on the pool for a disk', async () => {
    const dir = Dir.open(tempDir());
    try {
      expect(dir.backing).toBe(label.startsWith('tmpfs') ? 'memory' : 'device');
    } finally {
      dir.close();
    }
  });

  it('creates a file with the requested mode and leaves no temp file', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'kubeconfig');
    expect(await writeFileAtomic(file, 'x', { mode: 0o600 })).toBe('written');
    expect(readFileSync(file, 'utf8')).toBe('x');
    expect(statSync(file).mode & 0o7777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['kubeconfig']);
  });

  it('copies mode and owner onto the replacement', async () => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    writeFileSync(file, 'old');
    chmodSync(file, 0o640);
    chownSync(file, 65534, 65534);
    const old = readFileSync(file);
    expect(await writeFileAtomic(file, 'new', { mode: 0o640, uid: 65534, gid: 65534, expect: old })).toBe('written');
    const st = statSync(file);
    expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([0o640, 65534, 65534]);
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(readdirSync(dir)).toEqual(['10-calico.conflist']);
  });

  it("reports 'stale' and changes nothing when the file is no longer what was read", async () => {
    const dir = tempDir();
    const file = path.join(dir, 'a.conflist');
    writeFileSync(file, 'newer');
    expect(await writeFileAtomic(file, 'patched', { mode: 0o644, expect: Buffer.from('older') })).toBe('stale');
    expect(readFileSync(file, 'utf8')).toBe('newer');
    expect(readdirSync(dir)).toEqual(['a.conflist']);
  });

  it('copies xattrs and POSIX ACLs onto the replacement', async (ctx) => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    writeFileSync(file, 'old');
    chmodSync(file, 0o640);
    // A user xattr through the addon, an ACL entry with setfacl (Debian's acl package, installed by CI).
    const fd = openSync(file, 'r');
    try {
      addon.fsetxattr(fd, 'user.primary', Buffer.from('calico'));
    } catch (err) {
      closeSync(fd);
      if ((err as NodeJS.ErrnoException).code === 'ENOTSUP') skipOrFail(ctx, 'user xattrs on the temp filesystem');
      throw err;
    }
    closeSync(fd);
    const acl = spawnSync('setfacl', ['-m', 'u:65534:r', file]);
    const withAcl = acl.status === 0;
    if (!withAcl && process.env.CI === 'true') throw new Error(`setfacl failed: ${acl.stderr}`);
    const before = readXattrs(file);
    const old = readFileSync(file);
    expect(await writeFileAtomic(file, 'new', { mode: 0o640, expect: old, xattrs: before })).toBe('written');
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(readXattrs(file)).toEqual(before);
    expect(before.map(([k]) => k)).toContain('user.primary');
    if (withAcl) {
      expect(before.map(([k]) => k)).toContain('system.posix_acl_access');
      expect(spawnSync('getfacl', ['-c', '-n', file]).stdout.toString()).toContain('user:65534:r--');
    }
    expect(statSync(file).mode & 0o7777).toBe(0o640);
  });

  it('fits NAME_MAX: a 250-byte config name is replaced like any other', async () => {
    const dir = tempDir();
    const name = `${'é'.repeat(100)}${'x'.repeat(30)}.conflist`; // 239 bytes
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(NAME_MAX);
    const file = path.join(dir, name);
    writeFileSync(file, 'old');
    expect(await writeFileAtomic(file, 'new', { mode: 0o644, expect: Buffer.from('old') })).toBe('written');
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(readdirSync(dir)).toEqual([name]);
  });

  it("noReplace never overwrites an entry that appeared: 'stale', and no temp file", async () => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    writeFileSync(file, 'theirs');
    expect(await writeFileAtomic(file, 'ours', { mode: 0o644, noReplace: true })).toBe('stale');
    expect(readFileSync(file, 'utf8')).toBe('theirs');
    expect(readdirSync(dir)).toEqual(['10-calico.conflist']);
  });

  it('leaves the old file and no temp file when the rename fails', async () => {
    const dir = tempDir();
    const target = path.join(dir, 'is-a-dir.conflist');
    mkdirSync(path.join(target, 'child'), { recursive: true });
    await expect(writeFileAtomic(target, 'x', { mode: 0o644 })).rejects.toMatchObject({ code: expect.stringMatching(/EISDIR|ENOTEMPTY|EEXIST/) });
    expect(readdirSync(dir)).toEqual(['is-a-dir.conflist']);
  });

  it('leaves the old file when the directory refuses new files (chattr +i)', async (ctx) => {
    const dir = tempDir();
    const file = path.join(dir, 'a.conflist');
    writeFileSync(file, 'old');
    if (spawnSync('chattr', ['+i', dir]).status !== 0) skipOrFail(ctx, 'chattr +i');
    try {
      await expect(writeFileAtomic(file, 'new', { mode: 0o644, expect: Buffer.from('old') })).rejects.toMatchObject({ code: 'EPERM' });
    } finally {
      spawnSync('chattr', ['-i', dir]);
    }
    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['a.conflist']);
  });

  it('never replaces a newer concurrent write with a patch of an older one', async () => {
    // A writer process rewrites the file as fast as it can (temp + rename, like a primary CNI); we
    // patch whatever we read, again and again. Then one final pass: if any of our patches had landed
    // on top of a newer write, the final file would be a patch of an older version, not of the last.
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    const plugin = parsePlugin(pluginText);
    const version = (n: number) => JSON.stringify({ cniVersion: '0.3.1', name: 'k8s', serial: n, plugins: [{ type: 'calico' }] });
    writeFileSync(file, version(0));
    const writer = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const v = (n) => JSON.stringify({ cniVersion: '0.3.1', name: 'k8s', serial: n, plugins: [{ type: 'calico' }] });
         let n = 0; const end = Date.now() + 1500;
         while (Date.now() < end) { n++; fs.writeFileSync(${JSON.stringify(file)} + '.w', v(n)); fs.renameSync(${JSON.stringify(file)} + '.w', ${JSON.stringify(file)}); }
         console.log(n);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    writer.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const done = new Promise<void>((resolve) => writer.on('close', () => resolve()));
    let finished = false;
    void done.then(() => (finished = true));
    let stale = 0;
    let written = 0;
    while (!finished) {
      const content = readFileSync(file);
      const plan = planPatch(content, plugin);
      if (plan.action !== 'write') {
        await new Promise((resolve) => setImmediate(resolve)); // let the writer's exit be noticed
        continue;
      }
      const result = await writeFileAtomic(file, plan.bytes, { mode: 0o644, expect: content });
      if (result === 'stale') stale++;
      else written++;
    }
    await done;
    const last = Number(out.trim());
    const final = readFileSync(file);
    const plan = planPatch(final, plugin);
    const current = plan.action === 'write' ? (JSON.parse(plan.bytes.toString()) as { serial: number }) : (JSON.parse(final.toString()) as { serial: number });
    expect(current.serial).toBe(last);
    expect(written + stale).toBeGreaterThan(0);
    // The file is the writer's last version, or our patch of exactly that version: nothing older.
    const lastBytes = Buffer.from(version(last));
    const lastPatched = planPatch(lastBytes, plugin);
    expect(final.equals(lastBytes) || (lastPatched.action === 'write' && final.equals(lastPatched.bytes))).toBe(true);
  });

  it('gives back a newer write that its exchange swapped out (the give-back path): the file keeps it, no temp left', async () => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    // We read "v1", the primary wrote "v2" since: the exchange swaps v2 out, and it must go back.
    writeFileSync(file, 'v2');
    expect(await writeFileAtomic(file, 'v1 patched', { mode: 0o644, expect: Buffer.from('v1') })).toBe('stale');
    expect(readFileSync(file, 'utf8')).toBe('v2');
    expect(readdirSync(dir)).toEqual(['10-calico.conflist']);
  });

  it('gives back a newer write of any size without reading it whole (a 64 GiB sparse file)', async () => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conflist');
    writeFileSync(file, '');
    truncateSync(file, 64 * 1024 ** 3);
    expect(await writeFileAtomic(file, 'patched', { mode: 0o644, expect: Buffer.from('v1') })).toBe('stale');
    expect(statSync(file).size).toBe(64 * 1024 ** 3);
    expect(readdirSync(dir)).toEqual(['10-calico.conflist']);
  });
});

describe('unlinkIfUnchanged', () => {
  it('removes only the content it was given', async () => {
    const dir = tempDir();
    const file = path.join(dir, '10-calico.conf');
    writeFileSync(file, 'v2');
    const handle = Dir.open(dir);
    expect(await unlinkIfUnchanged(handle, '10-calico.conf', Buffer.from('v1'))).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('v2');
    expect(await unlinkIfUnchanged(handle, '10-calico.conf', Buffer.from('v2'))).toBe(true);
    handle.close();
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('writes started in one turn of the event loop (one batch per pool thread)', () => {
  it('land every file, and a failing one fails alone, naming its file', async () => {
    const live = tempDir();
    const doomed = tempDir();
    const gone = Dir.open(doomed);
    const here = Dir.open(live);
    try {
      rmdirSync(doomed); // its fd stays open: creating a file in it now fails with ENOENT
      const names = Array.from({ length: 200 }, (_, i) => `${String(i).padStart(3, '0')}.conflist`);
      const writes = names.map((name) => writeAt(here, name, `{"n":"${name}"}`, { mode: 0o644 }));
      const failing = writeAt(gone, 'x.conflist', '{}', { mode: 0o644 });
      await expect(failing).rejects.toMatchObject({ code: 'ENOENT', path: `${doomed}/x.conflist` });
      expect(await Promise.all(writes)).toEqual(names.map(() => 'written'));
      for (const name of names) expect(readFileSync(path.join(live, name), 'utf8')).toBe(`{"n":"${name}"}`);
      expect(readdirSync(live).sort()).toEqual(names);
    } finally {
      here.close();
      gone.close();
    }
  });
});

describe('touchSymlink', () => {
  it('re-creates the same link (a new inode, an event for the runtime), and never brings back a removed or replaced one', () => {
    const dir = tempDir();
    const handle = Dir.open(dir);
    try {
      symlinkSync('target-a', path.join(dir, '10-x.conflist'));
      const before = lstatSync(path.join(dir, '10-x.conflist')).ino;
      touchSymlink(handle, '10-x.conflist', 'target-a');
      expect(readlinkSync(path.join(dir, '10-x.conflist'))).toBe('target-a');
      expect(lstatSync(path.join(dir, '10-x.conflist')).ino).not.toBe(before);
      // Removed meanwhile (the primary deleted its link): it stays removed.
      rmSync(path.join(dir, '10-x.conflist'));
      touchSymlink(handle, '10-x.conflist', 'target-a');
      expect(readdirSync(dir)).toEqual([]);
      // Retargeted meanwhile (ln -sfn): the newer link stays.
      symlinkSync('target-b', path.join(dir, '10-x.conflist'));
      touchSymlink(handle, '10-x.conflist', 'target-a');
      expect(readlinkSync(path.join(dir, '10-x.conflist'))).toBe('target-b');
      expect(readdirSync(dir)).toEqual(['10-x.conflist']);
    } finally {
      handle.close();
    }
  });
});
