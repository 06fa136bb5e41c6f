// The Watcher interface over both backends, on real directories.
import { chmodSync, mkdirSync, renameSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWatcher } from '../../src/watch/create-watcher.js';
import { NativeWatcher } from '../../src/watch/native.js';
import type { WatchBackendName, WatchEvent } from '../../src/watch/watcher.js';
import { tempDir } from '../helpers/tmp.js';
import { Inbox } from '../helpers/wait.js';

function open(backend: WatchBackendName) {
  const inbox = new Inbox<WatchEvent>();
  const watcher = createWatcher(backend, (events) => inbox.push(...events));
  return { watcher, inbox };
}

describe.each(['native', 'parcel'] as const)('%s backend', (backend) => {
  it('reports a file written after watch() resolves, with its directory and name', async () => {
    const dir = tempDir();
    const { watcher, inbox } = open(backend);
    await watcher.watch(dir);
    expect(watcher.isWatching(dir)).toBe(true);
    writeFileSync(path.join(dir, '10-calico.conflist'), '{}');
    const event = await inbox.until((e) => e.name === '10-calico.conflist' && e.kind === 'write-closed', 'a complete write');
    expect(event.dir).toBe(dir);
    await watcher.close();
  });

  it('reports a rename into the directory and a delete', async () => {
    const dir = tempDir();
    const outside = tempDir();
    const { watcher, inbox } = open(backend);
    await watcher.watch(dir);
    writeFileSync(path.join(outside, 'x'), '{}');
    renameSync(path.join(outside, 'x'), path.join(dir, '05-cilium.conflist'));
    await inbox.until((e) => e.name === '05-cilium.conflist', 'the renamed file');
    rmSync(path.join(dir, '05-cilium.conflist'));
    await inbox.until((e) => e.name === '05-cilium.conflist' && e.kind === 'delete', 'the delete');
    await watcher.close();
  });

  it('ignores entries of subdirectories', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'multus.d'));
    const { watcher, inbox } = open(backend);
    await watcher.watch(dir);
    writeFileSync(path.join(dir, 'multus.d', 'inner.conf'), '{}');
    writeFileSync(path.join(dir, 'marker'), '');
    await inbox.until((e) => e.name === 'marker', 'the marker');
    expect(inbox.items.some((e) => e.name === 'inner.conf')).toBe(false);
    await watcher.close();
  });

  it('reports dir-gone once when the watched directory is removed', async () => {
    const dir = path.join(tempDir(), 'net.d');
    mkdirSync(dir);
    const { watcher, inbox } = open(backend);
    await watcher.watch(dir);
    rmdirSync(dir);
    await inbox.until((e) => e.kind === 'dir-gone', 'dir-gone');
    // A marker in a second watched directory proves later events have been delivered.
    const other = tempDir();
    await watcher.watch(other);
    writeFileSync(path.join(other, 'marker'), '');
    await inbox.until((e) => e.name === 'marker', 'the marker');
    expect(inbox.items.filter((e) => e.kind === 'dir-gone')).toHaveLength(1);
    await watcher.close();
  });

  it('stops reporting a directory after unwatch()', async () => {
    const [one, two] = [tempDir(), tempDir()];
    const { watcher, inbox } = open(backend);
    await watcher.watch(one);
    await watcher.watch(two);
    await watcher.unwatch(one);
    expect(watcher.isWatching(one)).toBe(false);
    writeFileSync(path.join(one, 'ignored'), '');
    writeFileSync(path.join(two, 'marker'), '');
    await inbox.until((e) => e.name === 'marker', 'the marker');
    expect(inbox.items.some((e) => e.name === 'ignored')).toBe(false);
    await watcher.close();
  });

  it('rejects a missing directory', async () => {
    const { watcher } = open(backend);
    await expect(watcher.watch(path.join(tempDir(), 'missing'))).rejects.toThrow();
    await watcher.close();
  });
});

describe('native backend specifics', () => {
  it('is watching as soon as watchSync returns (1,000 fresh directories)', async () => {
    const root = tempDir();
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    for (let i = 0; i < 1000; i++) {
      const dir = path.join(root, String(i));
      mkdirSync(dir);
      watcher.watchSync(dir);
      writeFileSync(path.join(dir, 'f.conflist'), '');
      const event = await inbox.until((e) => e.dir === dir && e.name === 'f.conflist', `the file in directory ${i}`);
      expect(event.kind).toBe('create');
      watcher.unwatchSync(dir);
    }
    expect(new Set(inbox.items.map((e) => e.dir)).size).toBe(1000);
    await watcher.close();
  });

  it('pairs moved-out and moved-in by cookie and reports create and modify', async () => {
    const dir = tempDir();
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    watcher.watchSync(dir);
    writeFileSync(path.join(dir, '.tmp'), '{}');
    renameSync(path.join(dir, '.tmp'), path.join(dir, '10-x.conflist'));
    symlinkSync('10-x.conflist', path.join(dir, '05-link.conflist'));
    await inbox.until((e) => e.name === '05-link.conflist', 'the symlink');
    const kinds = inbox.items.map((e) => `${e.kind}:${e.name}`);
    expect(kinds).toEqual([
      'create:.tmp',
      'modify:.tmp',
      'write-closed:.tmp',
      'moved-out:.tmp',
      'moved-in:10-x.conflist',
      'create:05-link.conflist',
    ]);
    expect(inbox.items[3]!.cookie).toBe(inbox.items[4]!.cookie);
    await watcher.close();
  });

  it('reports attribute changes only where asked, in order with the other directories\' events, and keeps them when the directory is watched again by another path', async () => {
    const plain = tempDir();
    const bin = tempDir();
    const link = path.join(tempDir(), 'bin-link');
    symlinkSync(bin, link);
    writeFileSync(path.join(plain, 'a.conflist'), '{}');
    writeFileSync(path.join(bin, 'linkerd-cni'), '#!/bin/sh\n');
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    watcher.watchSync(plain);
    watcher.watchSync(bin, { attributes: true });
    // The same inode again without attributes (IN_MASK_ADD): the bin dir's watch keeps them.
    watcher.watchSync(link);
    chmodSync(path.join(plain, 'a.conflist'), 0o600);
    chmodSync(path.join(bin, 'linkerd-cni'), 0o644);
    writeFileSync(path.join(plain, 'marker'), '');
    await inbox.until((e) => e.name === 'marker' && e.kind === 'write-closed', 'the marker');
    expect(inbox.items.filter((e) => e.kind === 'attrib' || e.name === 'marker').map((e) => `${e.kind}:${e.dir === plain ? 'plain' : e.dir === bin ? 'bin' : 'link'}/${e.name}`)).toEqual([
      'attrib:bin/linkerd-cni',
      'attrib:link/linkerd-cni',
      'create:plain/marker',
      'write-closed:plain/marker',
    ]);
    await watcher.close();
  });

  // inotify_add_watch on a second path to the same directory returns the same watch descriptor: each
  // event is reported once per path, and the watch stays until the last path is unwatched.
  it('reports an event under every path of one directory, and keeps the watch until the last path goes', async () => {
    const dir = tempDir();
    const link = path.join(tempDir(), 'net.d-link');
    symlinkSync(dir, link);
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    watcher.watchSync(dir);
    watcher.watchSync(link);
    watcher.watchSync(link); // twice: still one path
    writeFileSync(path.join(dir, 'a.conflist'), '{}');
    await inbox.until((e) => e.name === 'a.conflist' && e.kind === 'write-closed' && e.dir === link, 'the write under the link');
    expect(inbox.items.filter((e) => e.name === 'a.conflist' && e.kind === 'write-closed').map((e) => e.dir)).toEqual([dir, link]);

    watcher.unwatchSync(link);
    expect(watcher.isWatching(dir)).toBe(true);
    writeFileSync(path.join(dir, 'b.conflist'), '{}');
    writeFileSync(path.join(dir, 'marker'), '');
    await inbox.until((e) => e.name === 'marker' && e.kind === 'write-closed', 'the marker');
    expect(inbox.items.filter((e) => e.name === 'b.conflist' && e.kind === 'write-closed').map((e) => e.dir)).toEqual([dir]);

    watcher.unwatchSync(dir);
    writeFileSync(path.join(dir, 'c.conflist'), '{}');
    const probe = tempDir();
    watcher.watchSync(probe);
    writeFileSync(path.join(probe, 'marker'), '');
    await inbox.until((e) => e.dir === probe && e.name === 'marker', 'the marker in another directory');
    expect(inbox.items.some((e) => e.name === 'c.conflist')).toBe(false);
    await watcher.close();
  });

  it('reports overflow when the kernel queue overflows', async () => {
    const dir = tempDir();
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    watcher.watchSync(dir);
    for (let i = 0; i < 20_000; i++) writeFileSync(path.join(dir, String(i)), '');
    const overflow = await inbox.until((e) => e.kind === 'overflow', 'overflow');
    expect(overflow).toEqual({ kind: 'overflow', dir: '', name: '', cookie: 0, isDir: false });
    await watcher.close();
  });
});
