// Fights: another writer reverting the patch. Its own schedule is never backed off; a writer that
// reverts within milliseconds is, doubling, with one warning; Cilium's exclusive mode cannot be won.
// The fight rule itself is unit-tested in test/daemon/fight-detector.test.ts.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { temps } from '../../helpers/hostile.js';
import { freePort, metric, NodeHost, probe, untilMetric } from '../../helpers/node-host.js';
import { CiliumExclusive } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

describe('spare patches', () => {
  it('a spare left by SIGKILL is classified as our unlanded patch and swept; the file stays correct', async () => {
    const host = new NodeHost();
    const original = fixture('10-aws.conflist');
    host.put('10-aws.conflist', original);
    const first = await host.started();
    await waitFor(() => host.isChained('10-aws.conflist'), 'chained');
    host.put('10-aws.conflist', original); // rewritten after our patch: a spare is prepared
    await waitFor(() => host.isChained('10-aws.conflist') && temps(host.netDir).length === 1, 'chained again, with a spare ready');
    await first.stop('SIGKILL');
    const second = await host.started();
    await waitFor(() => temps(host.netDir).length === 0, 'the spare swept');
    expect(host.isChained('10-aws.conflist')).toBe(true);
    expect((await second.stop()).code).toBe(0);
    expect(host.read('10-aws.conflist')).toBe(original);
  });
});

describe('fights', () => {
  it('a primary rewriting every 100 ms for 5 s is never backed off, and chained after each rewrite', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ LOG_LEVEL: 'debug', HEALTH_PORT: String(port) });
    const original = fixture('10-aws.conflist');
    let unchainedAfter = 0;
    for (let i = 0; i < 50; i++) {
      host.put('10-aws.conflist', original);
      await new Promise((r) => setTimeout(r, 100));
      if (!host.isChained('10-aws.conflist')) unchainedAfter++;
    }
    expect(unchainedAfter).toBe(0);
    expect(await metric(port, 'cni_chainer_fights_total')).toBe(0);
    expect(await metric(port, 'cni_chainer_patches_total')).toBe(50);
    expect(await metric(port, 'cni_chainer_backoffs_total')).toBe(0);
    // The same bytes each time: from the second rewrite on, the prepared patch is swapped in (spares.ts).
    // Only the debug line of each write says which way it went: nothing else outside the agent can tell.
    const spares = daemon.logs.items.filter((l) => l.msg === 'chained plugin into config' && l.spare === true).length;
    expect(spares).toBeGreaterThanOrEqual(45);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('10-aws.conflist')).toBe(original);
    expect(readdirSync(host.netDir).filter((n) => n.includes('.cni-chainer-'))).toEqual([]);
  }, 20_000);

  it('a primary reverting within milliseconds backs off, doubling, with one warning', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const original = fixture('10-aws.conflist');
    host.put('10-aws.conflist', original);
    const fighter = host.start({}, [], [
      process.execPath,
      '-e',
      `const fs = require('fs'); const f = ${JSON.stringify(host.net('10-aws.conflist'))}; const text = ${JSON.stringify(original)};
       const revert = () => { try { if (fs.readFileSync(f, 'utf8').includes('linkerd-cni')) { fs.writeFileSync(f + '.w', text); fs.renameSync(f + '.w', f); } } catch {} };
       fs.watch(require('path').dirname(f), revert); revert(); // at once: an idle node brings no event
       setTimeout(() => process.exit(0), 4500);`,
      '--',
    ]);
    // The second backoff doubles the first: the level survived our successful write in between.
    let r = await probe(port, '/readyz');
    await waitFor(async () => (r = await probe(port, '/readyz')).body.includes('next try in 2000 ms'), '/readyz: the second backoff, 2000 ms', 10_000);
    expect(r.status).toBe(503);
    expect(r.body).toContain('10-aws.conflist: backoff');
    await fighter.exited;
    await waitFor(() => host.isChained('10-aws.conflist'), 'chained once the fighter is gone', 15_000);
    expect(daemon.logs.items.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('another writer reverts the plugin'))).toHaveLength(1);
    expect((await probe(port, '/metrics')).body).toMatch(/^cni_chainer_fights_total 1$/m);
  }, 30_000);

  it('the .conf upgrade path counts in fights too', async () => {
    const host = new NodeHost();
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    const conf = fixture('10-calico.conf');
    // A primary that puts its .conf back whenever the conversion removes it.
    const fighter = host.start({}, [], [
      process.execPath,
      '-e',
      `const fs = require('fs'); const d = ${JSON.stringify(host.netDir)}; const text = ${JSON.stringify(conf)};
       fs.watch(d, (e, n) => { if (n === '10-calico.conf' && !fs.existsSync(d + '/10-calico.conf')) { try { fs.writeFileSync(d + '/.w', text); fs.renameSync(d + '/.w', d + '/10-calico.conf'); } catch {} } });
       console.log(JSON.stringify({ msg: 'watching' }));
       setTimeout(() => process.exit(0), 3000);`,
      '--',
    ]);
    await fighter.waitLog('watching');
    host.put('10-calico.conf', conf);
    await untilMetric(port, 'cni_chainer_fights_total', 1, 8_000);
    await fighter.exited;
    // Each conversion writes the conflist once: without backoff, one per re-created .conf for 3 s.
    expect(await metric(port, 'cni_chainer_patches_total')).toBeLessThan(20);
    expect(await metric(port, 'cni_chainer_fights_total')).toBe(1);
  }, 20_000);
});

describe('fights seen through /readyz and the metrics', () => {
  it('backs off from a writer that keeps reverting the patch, counts one fight, and is not ready meanwhile', async () => {
    const host = new NodeHost();
    const port = 20_000 + ((process.pid + 7) % 20_000);
    await host.started({ HEALTH_PORT: String(port) });
    const original = fixture('10-aws.conflist');
    host.put('10-aws.conflist', original);
    // The "aws-node" of this test: whenever the plugin shows up, it writes its own version back.
    const fighter = spawn(process.execPath, [
      '-e',
      `const fs = require('fs'); const f = ${JSON.stringify(host.net('10-aws.conflist'))}; const text = ${JSON.stringify(original)};
       const end = Date.now() + 1200; let reverts = 0;
       const t = setInterval(() => { if (Date.now() > end) { clearInterval(t); console.log(reverts); return; }
         if (fs.readFileSync(f, 'utf8').includes('linkerd-cni')) { fs.writeFileSync(f + '.tmp', text); fs.renameSync(f + '.tmp', f); reverts++; } }, 2);`,
    ]);
    let reverts = '';
    fighter.stdout.on('data', (c: Buffer) => (reverts += c.toString()));
    const fought = new Promise((resolve) => fighter.on('close', resolve));
    await untilMetric(port, 'cni_chainer_fights_total', 1);
    const readyz = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toContain('10-aws.conflist: backoff');
    await fought;
    // Once the fighter gives up, the backoff expires and the file is chained again.
    await waitFor(() => host.isChained('10-aws.conflist'), 'chained after the fight', 20_000);
    const patches = await metric(port, 'cni_chainer_patches_total');
    // Without backoff every revert (one per ~2 ms for 1.2 s) would be answered by a write.
    expect(patches).toBeLessThan(20);
    expect(Number(reverts)).toBeGreaterThanOrEqual(3);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^cni_chainer_fights_total 1$/m);
    expect(metrics).toMatch(/^cni_chainer_backoffs_total [1-9]\d*$/m);
  });
});

describe("Cilium's exclusive mode: a fight the agent cannot win", () => {
  it.each(['in-place', 'owned'])('%s mode: writes capped, not ready naming cni.exclusive=false, nothing left carrying the plugin', async (mode) => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), CNI_PATCH_MODE: mode, LOG_LEVEL: 'info' });
    await waitFor(() => host.isChained(mode === 'owned' ? '10-calico-linkerd-cni.conflist' : CALICO), 'chained before Cilium starts');
    const cilium = new CiliumExclusive(host.netDir, fixture('05-cilium.conflist'));
    try {
      await waitFor(async () => (await probe(port, '/readyz')).body.includes('cni.exclusive=false'), 'not ready, naming the fix', 15_000);
      // Three seconds into the fight: the writes are capped by the backoff (1 s, then 2 s, ...).
      const before = await metric(port, 'cni_chainer_patches_total');
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const during = (await metric(port, 'cni_chainer_patches_total')) - before;
      expect(during).toBeLessThanOrEqual(4);
      // Not ready at any moment of the fight, also right after one of our capped writes.
      for (let i = 0; i < 40; i++) {
        expect((await probe(port, '/readyz')).status).toBe(503);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      // A fight, warned of once, not once per round: the fight's warning, and Cilium's renaming.
      expect(await metric(port, 'cni_chainer_fights_total')).toBeGreaterThanOrEqual(1);
      expect(daemon.logs.items.filter((l) => l.level === 40).length).toBeLessThanOrEqual(2);
    } finally {
      cilium.close();
    }
    expect(readdirSync(host.netDir).some((n) => n.endsWith('.cilium_bak'))).toBe(true);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.carriers()).toEqual([]);
    // Calico's own config, pushed aside by Cilium, is what Calico wrote.
    expect(host.read(`${CALICO}.cilium_bak`)).toBe(fixture(CALICO));
  }, 40_000);
});
