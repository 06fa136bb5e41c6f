import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempNameFor } from '../../src/fs/temp-names.js';
import { OwnRenames } from '../../src/daemon/lifecycle/own-renames.js';
import { addon, SYSCALL } from '../../src/native/addon.js';
import { NativeWatcher } from '../../src/watch/native.js';
import { EventList, type WatchEvent } from '../../src/watch/watcher.js';

/** The router's question for one event (event-router.ts asks it column by column). */
function isOwn(own: OwnRenames, event: WatchEvent): boolean {
  return own.isOwn(event.kind, event.name, event.cookie);
}
import { tempDir } from '../helpers/tmp.js';
import { Inbox } from '../helpers/wait.js';

describe('own renames', () => {
  it("recognises both sides of our exchange, and not another writer's rename, on real events", async () => {
    const dir = tempDir();
    const inbox = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => inbox.push(...events));
    watcher.watchSync(dir);
    const config = path.join(dir, '10-calico.conflist');
    writeFileSync(config, 'v1');
    const ours = path.join(dir, tempNameFor('10-calico.conflist'));
    writeFileSync(ours, 'v1 patched');
    addon.renameat2(SYSCALL.AT_FDCWD, ours, SYSCALL.AT_FDCWD, config, SYSCALL.RENAME_EXCHANGE); // how the agent lands a patch
    writeFileSync(path.join(dir, '.writer'), 'v2');
    renameSync(path.join(dir, '.writer'), config); // how a primary CNI lands a rewrite
    await inbox.until((e) => e.kind === 'moved-out' && e.name === '.writer', "the writer's rename");
    const own = new OwnRenames();
    own.observe(new EventList(inbox.items));
    const configSide = inbox.items.filter((e) => e.name === '10-calico.conflist' && (e.kind === 'moved-in' || e.kind === 'moved-out'));
    expect(configSide.map((e) => [e.kind, isOwn(own, e)])).toEqual([
      ['moved-in', true],
      ['moved-out', true],
      ['moved-in', false],
    ]);
    await watcher.close();
  });

  it("does not take another instance's rename for our own", () => {
    const other = '.a.conflist.cni-chainer-0123456789ab-7-000000000000-new.tmp';
    const events: WatchEvent[] = [
      { kind: 'moved-out', dir: '/d', name: other, cookie: 9, isDir: false },
      { kind: 'moved-in', dir: '/d', name: 'a.conflist', cookie: 9, isDir: false },
    ];
    const own = new OwnRenames();
    own.observe(new EventList(events));
    expect(isOwn(own, events[1]!)).toBe(false);
  });

  it('never matches events without a cookie (the parcel backend has none)', () => {
    const event: WatchEvent = { kind: 'moved-in', dir: '/d', name: 'a.conflist', cookie: 0, isDir: false };
    const tmp: WatchEvent = { kind: 'moved-out', dir: '/d', name: tempNameFor('a.conflist'), cookie: 0, isDir: false };
    const own = new OwnRenames();
    own.observe(new EventList([tmp, event]));
    expect(isOwn(own, event)).toBe(false);
  });

  it('recognises a rename whose halves arrive in two reads of the inotify fd', () => {
    const own = new OwnRenames();
    own.observe(new EventList([{ kind: 'moved-out', dir: '/d', name: tempNameFor('a.conflist'), cookie: 77, isDir: false }])); // first read ends here
    const second: WatchEvent = { kind: 'moved-in', dir: '/d', name: 'a.conflist', cookie: 77, isDir: false };
    own.observe(new EventList([second]));
    expect(isOwn(own, second)).toBe(true);
  });

  it('remembers at least the last 4,096 renames, and a bounded number', () => {
    const own = new OwnRenames();
    const tmp = tempNameFor('a.conflist');
    const configSide = (cookie: number): WatchEvent => ({ kind: 'moved-in', dir: '/d', name: 'a.conflist', cookie, isDir: false });
    for (let cookie = 1; cookie <= 3 * 4096; cookie++) own.observe(new EventList([{ kind: 'moved-out', dir: '/d', name: tmp, cookie, isDir: false }]));
    for (let cookie = 2 * 4096 + 1; cookie <= 3 * 4096; cookie++) expect(isOwn(own, configSide(cookie))).toBe(true);
    expect(isOwn(own, configSide(1))).toBe(false);
    expect(isOwn(own, configSide(4096))).toBe(false);
  });
});
