// Byte-exact, kernel-confined writes (issue 8), through the real CLI.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePlugin } from '../../../src/cni/chained-plugin.js';
import { planPatch } from '../../../src/cni/conflist.js';
import { nameHash } from '../../../src/fs/temp-names.js';
import { addon } from '../../../src/native/addon.js';
import { skipOrFail } from '../../helpers/capability.js';
import { fixture, pluginText } from '../../helpers/fixtures.js';
import { freePort, NodeHost, readyzLists } from '../../helpers/node-host.js';
import { tempDir } from '../../helpers/tmp.js';
import { waitFor } from '../../helpers/wait.js';

/** Every file below `dir` with its content hash (symlinks by their text), for "nothing changed here". */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = st.isSymbolicLink() ? `link:${readlinkSync(p)}` : createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}

describe('the primary gets its bytes back', () => {
  const odd: Record<string, string | Buffer> = {
    '10-bignum.conflist': '{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","big":9007199254740993,"huge":123456789012345678901234567890}]}',
    '11-floats.conflist': '{\n    "cniVersion": "1.0.0",\n    "name": "n",\n    "plugins": [\n        { "type": "bridge", "a": 1.0, "b": 1e3, "c": -0, "d": 1e-400 }\n    ]\n}\n',
    '12-dupkeys.conflist': '{"name":"a","name":"b","plugins":[{"type":"bridge","mtu":1400,"mtu":9000}]}',
    '13-escapes.conflist': '{"plugins":[{"type":"bridge","s":"\\u00e9\\/x","t":"\\ud83d\\ude00"}]}',
    '14-rawbyte.conflist': Buffer.concat([Buffer.from('{"plugins":[{"type":"bridge","raw":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}]}')]),
    '15-tabs.conflist': '{\r\n\t"plugins":\t[\r\n\t\t{"type":"bridge"}\r\n\t]\r\n}',
  };

  it('run, the primary writes each odd file, SIGTERM: every file byte-identical', async () => {
    const host = new NodeHost();
    const daemon = await host.started();
    for (const [name, content] of Object.entries(odd)) {
      writeFileSync(host.net(`.w-${name}`), content);
      renameSync(host.net(`.w-${name}`), host.net(name));
    }
    await waitFor(() => Object.keys(odd).every((n) => host.isChained(n)), 'every odd file chained');
    // While chained, the primary's tokens are all still there.
    expect(host.read('10-bignum.conflist')).toContain('9007199254740993');
    expect(host.read('11-floats.conflist')).toContain('"a": 1.0, "b": 1e3, "c": -0, "d": 1e-400');
    expect((await daemon.stop()).code).toBe(0);
    for (const [name, content] of Object.entries(odd)) expect(readFileSync(host.net(name)).equals(Buffer.from(content)), name).toBe(true);
  });

  it('a .conf and a .conflist of the same name: conflict, both left alone, reported by check', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    host.putFixture('10-calico.conf');
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-calico.conflist'), 'the conflist chained');
    await readyzLists(port, '10-calico.conf', 'conflict');
    expect(host.read('10-calico.conf')).toBe(fixture('10-calico.conf'));
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('10-calico.conflist')).toBe(fixture('10-calico.conflist')); // calico and portmap kept
  });

  it('keeps xattrs and POSIX ACL entries of the config', async (ctx) => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const file = host.net('10-flannel.conflist');
    const fd = openSync(file, 'r');
    try {
      addon.fsetxattr(fd, 'user.origin', Buffer.from('flannel'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOTSUP') skipOrFail(ctx, 'user xattrs on the temp filesystem');
      throw err;
    } finally {
      closeSync(fd);
    }
    const acl = spawnSync('setfacl', ['-m', 'u:65534:r', file]).status === 0;
    if (!acl && process.env.CI === 'true') throw new Error('setfacl is missing: .ci/run installs Debian acl');
    await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    const after = openSync(file, 'r');
    const names = addon.xattrs(after).map(([k]) => k);
    closeSync(after);
    expect(names).toContain('user.origin');
    if (acl) expect(spawnSync('getfacl', ['-c', '-n', file]).stdout.toString()).toContain('user:65534:r--');
  });

  it('a 240-byte config name is chained (temp names fit NAME_MAX)', async () => {
    const host = new NodeHost();
    const name = `${'a'.repeat(231)}.conflist`;
    host.putFixture('10-flannel.conflist', name);
    await host.started();
    await waitFor(() => host.isChained(name), 'chained');
  });

  it('a plugin config with numbers JavaScript cannot hold: chained as written, check agrees, restarts write nothing', async () => {
    const host = new NodeHost();
    const text = '{"type":"linkerd-cni","big":9007199254740993,"huge":1e400,"ratio":1.0}';
    host.putFixture('10-flannel.conflist');
    const env = { CNI_NETWORK_CONFIG: text, CNI_NETWORK_CONFIG_FILE: '' };
    const first = await host.started(env);
    await waitFor(() => host.read('10-flannel.conflist').includes('"huge":1e400'), 'chained with the text as given');
    expect(host.read('10-flannel.conflist')).toContain(text);
    expect((await host.cli(['check'], env)).code).toBe(0);
    await first.stop('SIGKILL');
    const before = statSync(host.net('10-flannel.conflist'));
    const second = await host.started(env);
    await second.stop('SIGKILL');
    const after = statSync(host.net('10-flannel.conflist'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });
});

describe('crash safety of the exchange', () => {
  it('a newer write stranded in a temp file by a crash mid-exchange is put back and patched', async () => {
    const host = new NodeHost();
    const plugin = parsePlugin(pluginText.replaceAll('__KUBECONFIG_FILEPATH__', '/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig'));
    const older = Buffer.from(fixture('10-flannel.conflist'));
    const newer = Buffer.from(fixture('10-flannel.conflist').replace('"flannel"', '"flannel-v2"'));
    const patchedOlder = (planPatch(older, plugin) as { bytes: Buffer }).bytes;
    // What a SIGKILL between the exchange and the give-back leaves: the config holds our patch of the
    // older version, and our temp (expecting the older version's hash) holds the primary's newer write.
    writeFileSync(host.net('10-flannel.conflist'), patchedOlder);
    const expectHash = createHash('sha256').update(older).digest('hex').slice(0, 12);
    writeFileSync(host.net(`.10-flannel.conflist.cni-chainer-0123456789ab-1-${nameHash('10-flannel.conflist')}-${expectHash}.tmp`), newer);
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist') && host.read('10-flannel.conflist').includes('flannel-v2'), 'the newer write, chained');
    expect(readdirSync(host.netDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect((await daemon.stop()).code).toBe(0);
    expect(readFileSync(host.net('10-flannel.conflist')).equals(newer)).toBe(true);
  });

  it('SIGKILL at random moments of a storm: every file is the old or the new version, and no temp survives the next start', async () => {
    const host = new NodeHost();
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 50; i++) writeFileSync(host.net(`c${i}.conflist`), fixture(i % 2 === 0 ? '10-flannel.conflist' : '10-aws.conflist'));
      const daemon = host.start();
      await new Promise((r) => setTimeout(r, 120 + round * 13));
      await daemon.stop('SIGKILL');
      for (let i = 0; i < 50; i++) {
        const text = host.read(`c${i}.conflist`);
        const original = fixture(i % 2 === 0 ? '10-flannel.conflist' : '10-aws.conflist');
        expect(text === original || host.isChained(`c${i}.conflist`)).toBe(true);
      }
    }
    const daemon = await host.started();
    await waitFor(() => host.isChained('c49.conflist'), 'chained');
    expect(readdirSync(host.netDir).filter((n) => n.includes('.cni-chainer-'))).toEqual([]);
    await daemon.stop();
  }, 60_000);
});

describe('confinement by the kernel', () => {
  it('a directory of a symlink target swapped for a link out of the root in a tight loop: nothing outside changes', async () => {
    const host = new NodeHost();
    const outside = tempDir('cni-chainer-outside-');
    mkdirSync(path.join(outside, 'cni'));
    writeFileSync(path.join(outside, 'cni', 'net.conflist'), fixture('10-aws.conflist'));
    const before = snapshot(outside);
    const real = host.disk('/var/lib/cni/real');
    mkdirSync(real, { recursive: true });
    writeFileSync(path.join(real, 'net.conflist'), fixture('10-flannel.conflist'));
    const swapped = host.disk('/var/lib/cni/dir'); // the link's path goes through this name
    symlinkSync('real', swapped);
    symlinkSync('/var/lib/cni/dir/net.conflist', host.net('05-x.conflist'));
    const daemon = await host.started();
    // A swapper flips /var/lib/cni/dir between the real directory and a link to `outside`, while a
    // primary keeps rewriting the target, for 10 s.
    const swapper = spawn(process.execPath, [
      '-e',
      `const fs = require('fs'); const d = ${JSON.stringify(swapped)}; const end = Date.now() + 10000; let i = 0;
       while (Date.now() < end) { try { fs.symlinkSync(i++ % 2 ? 'real' : ${JSON.stringify(path.join(outside, 'cni'))}, d + '.n'); fs.renameSync(d + '.n', d); } catch {} }`,
    ]);
    const rewriter = spawn(process.execPath, [
      '-e',
      `const fs = require('fs'); const f = ${JSON.stringify(path.join(real, 'net.conflist'))}; const t = ${JSON.stringify(fixture('10-flannel.conflist'))};
       const end = Date.now() + 10000; const tick = () => { if (Date.now() > end) return; try { fs.writeFileSync(f + '.w', t); fs.renameSync(f + '.w', f); } catch {} setTimeout(tick, 5); }; tick();`,
    ]);
    // A control config, chained meanwhile: a dead or stuck agent cannot pass this test.
    await new Promise((r) => setTimeout(r, 3000));
    host.putFixture('10-calico.conflist', '20-control.conflist');
    await waitFor(() => host.isChained('20-control.conflist'), 'the control config chained during the race');
    await Promise.all([new Promise((r) => swapper.on('close', r)), new Promise((r) => rewriter.on('close', r))]);
    // The control config chained during the race: the agent was alive throughout (how many of the
    // racing rewrites it also chained depends on the machine's load).
    expect(snapshot(outside)).toEqual(before);
    await daemon.stop();
    expect(snapshot(outside)).toEqual(before);
  }, 40_000);

  it('net.d an absolute symlink whose target is missing inside the root: nothing outside is touched', async () => {
    const outside = tempDir('cni-chainer-outside-');
    writeFileSync(path.join(outside, '10-outside.conflist'), fixture('10-flannel.conflist'));
    const before = snapshot(outside);
    const host = new NodeHost({ netDir: false });
    mkdirSync(path.dirname(host.netDir), { recursive: true });
    symlinkSync(outside, host.netDir); // absolute: inside the root it means <root>/<outside>, which is missing
    const daemon = await host.started();
    const check = await host.cli(['check']);
    expect(check.stdout).not.toContain('10-outside.conflist');
    expect(snapshot(outside)).toEqual(before);
    // Created inside the root, the same path is net.d.
    mkdirSync(host.disk(outside), { recursive: true });
    host.put(path.join(host.disk(outside), '10-inside.conflist'), fixture('10-flannel.conflist'));
    await waitFor(() => host.isChained(path.join(host.disk(outside), '10-inside.conflist')), 'chained inside the root');
    await daemon.stop();
    expect(snapshot(outside)).toEqual(before);
  });

  it('the host bin dir an absolute symlink: the binary goes inside the root, and only there is it removed', async () => {
    const outside = tempDir('cni-chainer-outside-');
    writeFileSync(path.join(outside, 'other-plugin'), 'keep me');
    const before = snapshot(outside);
    const host = new NodeHost();
    mkdirSync(path.dirname(host.binDir), { recursive: true });
    symlinkSync(outside, host.binDir);
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(existsSync(path.join(host.disk(outside), 'linkerd-cni'))).toBe(true);
    expect(statSync(path.join(host.disk(outside), 'linkerd-cni')).mode & 0o111).not.toBe(0);
    expect(snapshot(outside)).toEqual(before);
    expect((await daemon.stop()).code).toBe(0);
    expect(existsSync(path.join(host.disk(outside), 'linkerd-cni'))).toBe(false);
    expect(snapshot(outside)).toEqual(before);
    rmSync(outside, { recursive: true });
  });
});
