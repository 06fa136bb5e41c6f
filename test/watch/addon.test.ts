// The C++ addon's inotify watcher against the real kernel: synchronous readiness, decoding, errors,
// lifetime. Its *at syscalls are test/fs/at-syscalls.test.ts.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { IN } from '../../src/native/addon.js';
import { InotifyWatcher, type RawInotifyEvent } from '../helpers/inotify.js';
import { addonFile } from '../helpers/addon-path.js';
import { runNodeScript, runProcess } from '../helpers/run-node.js';
import { tempDir, tmpfsDir } from '../helpers/tmp.js';
import { Inbox } from '../helpers/wait.js';
import { itWith } from '../helpers/capability.js';

function watch(dir: string, mask = IN.IN_ALL_EVENTS) {
  const inbox = new Inbox<RawInotifyEvent>();
  const errors: Error[] = [];
  const watcher = new InotifyWatcher(dir, mask, (events, error) => {
    inbox.push(...events);
    if (error) errors.push(error);
  });
  return { watcher, inbox, errors };
}

describe('InotifyWatcher constructor', () => {
  it('is live when it returns: a file created on the next line is always reported (1,000 times)', async () => {
    const root = tempDir();
    for (let i = 0; i < 1000; i++) {
      const dir = path.join(root, String(i));
      mkdirSync(dir);
      const { watcher, inbox } = watch(dir, IN.IN_CREATE);
      writeFileSync(path.join(dir, 'f'), '');
      const event = await inbox.until((e) => e.name === 'f' && (e.mask & IN.IN_CREATE) !== 0, `IN_CREATE in iteration ${i}`);
      expect(event.wd).toBe(watcher.wd);
      watcher.close();
    }
  });

  it('returns the watch descriptor of its directory', () => {
    const { watcher } = watch(tempDir());
    expect(watcher.wd).toBeGreaterThan(0);
    watcher.close();
  });

  it('throws ENOENT with code, errno, syscall and path for a missing directory', () => {
    const missing = path.join(tempDir(), 'missing');
    let thrown: NodeJS.ErrnoException | undefined;
    try {
      watch(missing);
    } catch (err) {
      thrown = err as NodeJS.ErrnoException;
    }
    expect(thrown).toMatchObject({ code: 'ENOENT', errno: -2, syscall: 'inotify_add_watch', path: missing });
  });

  it('throws ENOTDIR when IN_ONLYDIR is asked for a file', () => {
    const file = path.join(tempDir(), 'file');
    writeFileSync(file, '');
    expect(() => watch(file, IN.IN_CREATE | IN.IN_ONLYDIR)).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });

  it('throws TypeError for bad arguments', () => {
    expect(() => new InotifyWatcher(1 as unknown as string, 0, () => {})).toThrow(TypeError);
    expect(() => new InotifyWatcher('/', 'x' as unknown as number, () => {})).toThrow(TypeError);
    expect(() => new InotifyWatcher('/', IN.IN_CREATE, 3 as unknown as () => void)).toThrow(TypeError);
  });

  it('throws EACCES for a directory the user may not read', async () => {
    const dir = path.join(tempDir(), 'private');
    mkdirSync(dir);
    chmodSync(path.dirname(dir), 0o755);
    chmodSync(dir, 0o700);
    // root reads everything, so the check runs as `nobody` in a child process.
    const result = await runNodeScript(
      `const a = require(${JSON.stringify(addonFile)});
       try { new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {}); console.log('no error'); }
       catch (e) { console.log(JSON.stringify({ code: e.code, syscall: e.syscall, path: e.path })); }`,
      { uid: 65534, gid: 65534 },
    );
    expect(JSON.parse(result.stdout)).toEqual({ code: 'EACCES', syscall: 'inotify_add_watch', path: dir });
  });
});

// The inotify limits are per user namespace (/proc/sys/user/max_inotify_*), so a throwaway namespace
// gives a real kernel limit to hit without touching the machine's own settings.
const canUnshare = spawnSync('unshare', ['-Ur', 'true']).status === 0;

describe('inotify limits', () => {
  const it = itWith(canUnshare, 'user namespaces (unshare -Ur)');
  async function inNamespace(limits: string, script: string) {
    const result = await runProcess('unshare', [
      '-Ur',
      'sh',
      '-c',
      `${limits}; exec "${process.execPath}" -e "$0"`,
      `const a = require(${JSON.stringify(addonFile)}); ${script}`,
    ]);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as { code: string; message: string };
  }

  it('ENOSPC from addWatch names fs.inotify.max_user_watches', async () => {
    const dir = tempDir();
    const error = await inNamespace(
      'echo 1 > /proc/sys/user/max_inotify_watches',
      `const w = new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {});
       try { w.addWatch('/', a.constants.IN_CREATE); console.log('{}'); }
       catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }
       w.close();`,
    );
    expect(error.code).toBe('ENOSPC');
    expect(error.message).toContain('fs.inotify.max_user_watches');
  });

  it('ENOSPC from the constructor closes the fd it opened', async () => {
    const dir = tempDir();
    const result = await inNamespace(
      'echo 0 > /proc/sys/user/max_inotify_watches',
      `const fs = require('fs'); const before = fs.readdirSync('/proc/self/fd').length; let code;
       for (let i = 0; i < 50; i++) { try { new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {}); } catch (e) { code = e.code; } }
       console.log(JSON.stringify({ code, message: String(fs.readdirSync('/proc/self/fd').length - before) }));`,
    );
    expect(result).toEqual({ code: 'ENOSPC', message: '0' });
  });

  it('EMFILE from the constructor names fs.inotify.max_user_instances', async () => {
    const dir = tempDir();
    const error = await inNamespace(
      'echo 1 > /proc/sys/user/max_inotify_instances',
      `const w = new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {});
       try { new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {}); console.log('{}'); }
       catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }
       w.close();`,
    );
    expect(error.code).toBe('EMFILE');
    expect(error.message).toContain('fs.inotify.max_user_instances');
  });
});

describe('event decoding', () => {
  it('reports create, modify, close-write, rename with a shared cookie, and delete', async () => {
    const dir = tempDir();
    const { watcher, inbox } = watch(dir);
    writeFileSync(path.join(dir, 'a.conflist'), '{}');
    renameSync(path.join(dir, 'a.conflist'), path.join(dir, 'b.conflist'));
    spawnSync('rm', [path.join(dir, 'b.conflist')]);
    await inbox.until((e) => (e.mask & IN.IN_DELETE) !== 0, 'IN_DELETE');
    const seen = inbox.items.map((e) => [e.mask & ~IN.IN_ISDIR, e.name]);
    expect(seen).toEqual(
      expect.arrayContaining([
        [IN.IN_CREATE, 'a.conflist'],
        [IN.IN_MODIFY, 'a.conflist'],
        [IN.IN_CLOSE_WRITE, 'a.conflist'],
        [IN.IN_MOVED_FROM, 'a.conflist'],
        [IN.IN_MOVED_TO, 'b.conflist'],
        [IN.IN_DELETE, 'b.conflist'],
      ]),
    );
    const from = inbox.items.find((e) => e.mask & IN.IN_MOVED_FROM)!;
    const to = inbox.items.find((e) => e.mask & IN.IN_MOVED_TO)!;
    expect(from.cookie).not.toBe(0);
    expect(to.cookie).toBe(from.cookie);
    expect(inbox.items.every((e) => e.wd === watcher.wd)).toBe(true);
    watcher.close();
  });

  it('passes IN_DELETE_SELF and IN_IGNORED through when the directory is removed', async () => {
    const dir = path.join(tempDir(), 'net.d');
    mkdirSync(dir);
    const { watcher, inbox } = watch(dir);
    rmdirSync(dir);
    await inbox.until((e) => (e.mask & IN.IN_IGNORED) !== 0, 'IN_IGNORED');
    expect(inbox.items.some((e) => e.mask & IN.IN_DELETE_SELF)).toBe(true);
    watcher.close();
  });

  it('sets IN_ISDIR for directories and reports names of any length', async () => {
    const dir = tempDir();
    const { watcher, inbox } = watch(dir, IN.IN_CREATE);
    const long = 'x'.repeat(255);
    mkdirSync(path.join(dir, 'sub'));
    writeFileSync(path.join(dir, long), '');
    await inbox.until((e) => e.name === long, 'the 255-byte name');
    expect(inbox.items.find((e) => e.name === 'sub')!.mask & IN.IN_ISDIR).toBeTruthy();
    watcher.close();
  });

  it('reports IN_Q_OVERFLOW (wd -1) when the queue overflows while the loop is blocked', async () => {
    const dir = tempDir();
    const { watcher, inbox } = watch(dir, IN.IN_CREATE);
    const limit = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    // All of this runs synchronously, so nothing is read until the queue is past its limit.
    for (let i = 0; i < limit + 100; i++) writeFileSync(path.join(dir, String(i)), '');
    const overflow = await inbox.until((e) => (e.mask & IN.IN_Q_OVERFLOW) !== 0, 'IN_Q_OVERFLOW');
    expect(overflow.wd).toBe(-1);
    expect(inbox.items.length).toBe(limit + 1);
    watcher.close();
  });

  it('empties the kernel queue at every wakeup: a consumer slower than the writer loses nothing', async () => {
    const dir = tempDir();
    const limit = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    // Each of the first four batches makes limit/2 events (an empty file: IN_CREATE, IN_CLOSE_WRITE)
    // before it returns, twice what the queue holds in all. A watcher that reads only a batch's worth
    // at a wakeup leaves the rest in the kernel, which overflows during the third batch.
    const filesPerBatch = Math.ceil(limit / 4);
    const rounds = 4;
    const seen = new Set<string>();
    let batches = 0;
    let largestBatch = 0;
    const inbox = new Inbox<RawInotifyEvent>();
    const watcher = new InotifyWatcher(dir, IN.IN_CREATE | IN.IN_CLOSE_WRITE, (events) => {
      largestBatch = Math.max(largestBatch, events.length);
      inbox.push(...events);
      for (const e of events) if (e.mask & IN.IN_CLOSE_WRITE) seen.add(e.name);
      if (batches < rounds) {
        for (let i = 0; i < filesPerBatch; i++) writeFileSync(path.join(dir, `${batches}-${i}`), '');
      }
      batches++;
    });
    writeFileSync(path.join(dir, 'start'), '');
    await inbox.until((e) => seen.size === rounds * filesPerBatch + 1 || (e.mask & IN.IN_Q_OVERFLOW) !== 0, 'every file closed, or an overflow');
    expect(inbox.items.filter((e) => e.mask & IN.IN_Q_OVERFLOW)).toEqual([]);
    expect(inbox.items.length).toBe(2 * (rounds * filesPerBatch + 1));
    // Still delivered a few hundred at a time, so that the work of one batch starts before the next.
    expect(largestBatch).toBeLessThan(1000);
    watcher.close();
  });

  it('reads ahead 4 MiB at most: a writer that never lets up gets the kernel overflow, not unbounded memory', async () => {
    const dir = tmpfsDir() ?? tempDir();
    const limit = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8'));
    // Names of 7 bytes take 32 bytes an event (a 16-byte header and the name padded to 16), so 4 MiB
    // of backlog is 131,072 events. Each callback makes limit/2 events while it runs (never more than
    // the kernel's queue holds, so that only a bounded backlog can overflow it) and is handed ~500;
    // half as many callbacks again as filling the backlog and the queue takes.
    const backlogEvents = (4 * 1024 * 1024) / 32;
    const perCallback = Math.ceil(limit / 4);
    const callbacks = Math.ceil((1.5 * (backlogEvents + limit)) / (2 * perCallback)) + 2;
    let batches = 0;
    let delivered = 0;
    let overflowAt: number | undefined;
    const done = new Inbox<number>();
    const watcher = new InotifyWatcher(dir, IN.IN_CREATE | IN.IN_CLOSE_WRITE, (events) => {
      delivered += events.length;
      if (overflowAt === undefined && events.some((e) => e.mask & IN.IN_Q_OVERFLOW)) {
        overflowAt = delivered;
        done.push(delivered);
      }
      if (batches < callbacks && overflowAt === undefined) {
        for (let i = 0; i < perCallback; i++) writeFileSync(path.join(dir, `${batches}-${i}`.padStart(7, '0')), '');
        batches++;
      }
      // Every event delivered and none lost: the backlog had no bound.
      if (delivered === 2 * (callbacks * perCallback + 1)) done.push(delivered);
    });
    writeFileSync(path.join(dir, 'start'), '');
    await done.until(() => true, 'an overflow, or every event', 60_000);
    watcher.close();
    expect(overflowAt).toBeDefined();
    // What was read before it: at most the backlog, the kernel's queue, and what was delivered meanwhile.
    expect(overflowAt).toBeLessThan(2 * (backlogEvents + limit));
  }, 120_000);

  it('close() in a callback stops delivery of the events read ahead', async () => {
    const dir = tempDir();
    let calls = 0;
    const watcher = new InotifyWatcher(dir, IN.IN_CREATE, (events) => {
      calls++;
      expect(events.length).toBeGreaterThan(0);
      watcher.close();
    });
    // 3,000 events are read at the first wakeup, several batches' worth.
    for (let i = 0; i < 3000; i++) writeFileSync(path.join(dir, String(i)), '');
    const witness = watch(dir, IN.IN_CREATE);
    writeFileSync(path.join(dir, 'after'), '');
    await witness.inbox.until((e) => e.name === 'after', 'the witness event');
    await new Promise((resolve) => setTimeout(resolve, 50));
    witness.watcher.close();
    expect(calls).toBe(1);
    expect(watcher.closed).toBe(true);
  });

  it('watches more directories on the same fd and stops on removeWatch', async () => {
    const [one, two] = [tempDir(), tempDir()];
    const { watcher, inbox } = watch(one, IN.IN_CREATE);
    const wd2 = watcher.addWatch(two, IN.IN_CREATE);
    expect(wd2).not.toBe(watcher.wd);
    writeFileSync(path.join(two, 'x'), '');
    await inbox.until((e) => e.wd === wd2 && e.name === 'x', 'event from the second directory');
    watcher.removeWatch(wd2);
    await inbox.until((e) => e.wd === wd2 && (e.mask & IN.IN_IGNORED) !== 0, 'IN_IGNORED after removeWatch');
    expect(() => watcher.removeWatch(wd2)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    watcher.close();
  });
});

describe('lifetime', () => {
  it('close() is idempotent and stops delivery', async () => {
    const dir = tempDir();
    const { watcher, inbox } = watch(dir, IN.IN_CREATE);
    watcher.close();
    watcher.close();
    expect(watcher.closed).toBe(true);
    writeFileSync(path.join(dir, 'late'), '');
    // A second, open watcher proves the event happened and was delivered to whoever still listens.
    const witness = watch(dir, IN.IN_CREATE);
    writeFileSync(path.join(dir, 'later'), '');
    await witness.inbox.until((e) => e.name === 'later', 'the witness event');
    witness.watcher.close();
    expect(inbox.items).toEqual([]);
    expect(() => watcher.addWatch(dir, IN.IN_CREATE)).toThrow(/closed/);
  });

  it('keeps the process alive while open and ref()ed, and not after unref()', async () => {
    const dir = tempDir();
    const unrefed = await runNodeScript(
      `const a = require(${JSON.stringify(addonFile)});
       const w = new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {}); w.unref(); console.log('exiting');`,
    );
    expect(unrefed).toMatchObject({ code: 0, stdout: 'exiting\n' });
    // ref()ed, the process only ends because the event arrives and the callback closes the watcher.
    const refed = await runNodeScript(
      `const a = require(${JSON.stringify(addonFile)}); const fs = require('fs');
       const w = new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, (names) => { console.log(names[0]); w.close(); });
       w.unref(); w.ref(); setImmediate(() => fs.writeFileSync(${JSON.stringify(path.join(dir, 'wake'))}, ''));`,
    );
    expect(refed).toMatchObject({ code: 0, stdout: 'wake\n' });
  });

  it('reports an exception thrown by the callback as uncaughtException', async () => {
    const dir = tempDir();
    const result = await runNodeScript(
      `const a = require(${JSON.stringify(addonFile)}); const fs = require('fs');
       process.on('uncaughtException', (e) => { console.log('caught ' + e.message); w.close(); });
       const w = new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => { throw new Error('boom'); });
       fs.writeFileSync(${JSON.stringify(path.join(dir, 'x'))}, '');`,
    );
    expect(result).toMatchObject({ code: 0, stdout: 'caught boom\n' });
  });

  it('survives worker threads that are terminated or exit with open watchers', async () => {
    const dir = tempDir();
    const result = await runNodeScript(
      `const { Worker } = require('worker_threads');
       const body = \`
         const a = require(${JSON.stringify(addonFile)}); const fs = require('fs'); const { parentPort, workerData } = require('worker_threads');
         const dir = ${JSON.stringify(dir)} + '/' + workerData.i; fs.mkdirSync(dir);
         const w = new a.InotifyWatcher(dir, a.constants.IN_CREATE, () => {
           parentPort.postMessage('event'); if (workerData.exit) process.exit(0);
         });
         fs.writeFileSync(dir + '/f', '');\`;
       (async () => {
         for (let i = 0; i < 20; i++) {
           const w = new Worker(body, { eval: true, workerData: { i, exit: i % 2 === 1 } });
           // A worker that calls process.exit() right after postMessage() may be gone before its
           // message is delivered (Node does not flush a worker's port at exit): then its exit is the sign.
           const exited = new Promise((r) => w.once('exit', r));
           await Promise.race([new Promise((r) => w.once('message', r)), exited]);
           if (i % 2 === 0) await w.terminate(); else await exited;
         }
         console.log('ok');
       })();`,
    );
    expect(result).toMatchObject({ code: 0, signal: null, stdout: 'ok\n' });
  });

  it('lets the process exit while a watcher is open', async () => {
    const dir = tempDir();
    const result = await runNodeScript(
      `const a = require(${JSON.stringify(addonFile)});
       new a.InotifyWatcher(${JSON.stringify(dir)}, a.constants.IN_CREATE, () => {}); process.exit(0);`,
    );
    expect(result).toMatchObject({ code: 0, signal: null });
  });
});
