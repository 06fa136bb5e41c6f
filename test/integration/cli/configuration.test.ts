// Configuration mistakes and what the CLI says of them: a port in use, net.d a regular file, a config
// name with a newline, a stalled event loop. The real CLI, the real kernel.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';

describe('configuration and messages', () => {
  it('HEALTH_PORT in use: one line naming it, exit 2, no stack', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const { createServer } = await import('node:net');
    const blocker = createServer().listen(port, '::');
    await new Promise((r) => blocker.once('listening', r));
    try {
      const result = await host.cli(['run'], { HEALTH_PORT: String(port) });
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^cni-chainer: HEALTH_PORT: .*EADDRINUSE/)]);
    } finally {
      blocker.close();
    }
  });

  it('check and uninstall with net.d a regular file: a clear answer and exit 1 from both, no stack', async () => {
    const host = new NodeHost({ netDir: false });
    mkdirSync(path.dirname(host.netDir), { recursive: true });
    writeFileSync(host.netDir, 'not a directory');
    const check = await host.cli(['check']);
    expect(check.code).toBe(1);
    expect(check.stdout).toBe('/etc/cni/net.d: is not a directory\nnot chained: no CNI config can be read\n');
    expect(check.stderr).toBe('');
    // uninstall cannot look for configs that hold the plugin either: it says so, as check does.
    const uninstall = await host.cli(['uninstall']);
    expect(uninstall.code).toBe(1);
    expect(uninstall.stderr).toBe('cni-chainer: uninstall incomplete: the plugin is still in "/etc/cni/net.d (is not a directory)"\n');
  });

  it('check escapes a config name with a newline', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist', 'evil\n  * 00-forged.conflist  chained\nx.conflist');
    const check = await host.cli(['check']);
    expect(check.stdout).not.toMatch(/^ {2}\* 00-forged/m);
    expect(check.stdout).toContain('"evil\\n');
  });

  it('/healthz reports a stalled event loop after it recovers', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    daemon.child.kill('SIGSTOP'); // the loop stalls: no timer, no request served
    await new Promise((r) => setTimeout(r, 6_500));
    daemon.child.kill('SIGCONT');
    const r = await probe(port, '/healthz');
    expect(r.status).toBe(503);
    expect(r.body).toMatch(/event loop stalled for \d+ ms/);
  }, 20_000);
});
