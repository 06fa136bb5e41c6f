// Spare patches and the fight rule.
// The real CLI, the real kernel: each test names the item of the lifecycle issue it reproduces
// (issue 7; each failed on version 0.1), or the later issue that added it.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { temps } from '../../helpers/hostile.js';
import { freePort, metric, NodeHost, probe } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

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
    expect(daemon.logs.items.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('another writer reverts the plugin'))).toEqual([]);
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
    const daemon = await host.started({ HEALTH_PORT: String(port) });
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
    await daemon.waitLog((l) => typeof l.msg === 'string' && l.msg.startsWith('another writer reverts the plugin'), 8_000);
    await fighter.exited;
    // Each conversion writes the conflist once: without backoff, one per re-created .conf for 3 s.
    expect(await metric(port, 'cni_chainer_patches_total')).toBeLessThan(20);
    expect(await metric(port, 'cni_chainer_fights_total')).toBe(1);
  }, 20_000);
});
