// `cni-chainer run` start-up, against real files and the real CLI.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { planUnpatch } from '../../../src/cni/conflist.js';
import { cliFile, repoRoot } from '../../helpers/addon-path.js';
import { itWith } from '../../helpers/capability.js';
import { fixture, fixtureNames } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe, readyzLists } from '../../helpers/node-host.js';
import { runProcess } from '../../helpers/run-node.js';
import { tempDir } from '../../helpers/tmp.js';
import { waitFor } from '../../helpers/wait.js';

describe('start-up', () => {
  it('chains every pre-existing config, upgrading .conf files, and installs binaries and kubeconfig first', async () => {
    const host = new NodeHost();
    for (const name of fixtureNames) host.putFixture(name);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    // 10-calico.conf and 10-calico.conflist both exist in the fixtures: the upgrade never overwrites the
    // existing conflist, so the .conf stays as it is (status conflict) and the conflist is chained itself.
    // Multus' 00-multus.conf is a meta-plugin: never converted, its embedded delegate chained inside.
    const converted = fixtureNames.filter((n) => n !== '10-calico.conf' && n !== '00-multus.conf');
    const expected = converted.map((n) => n.replace(/\.conf$/, '.conflist'));
    await waitFor(() => expected.every((n) => host.isChained(n)), 'every config chained');
    await waitFor(() => host.read('00-multus.conf').includes(`"${String(host.plugin.type)}"`), "Multus' delegate chained");
    expect(existsSync(host.net('00-multus.conflist'))).toBe(false);
    for (const conf of converted.filter((n) => n.endsWith('.conf'))) expect(existsSync(host.net(conf))).toBe(false);
    expect(host.read('10-calico.conf')).toBe(fixture('10-calico.conf'));
    const unpatched = planUnpatch(readFileSync(host.net('10-calico.conflist')), host.plugin.type as string);
    expect(unpatched.action === 'write' && unpatched.bytes.toString()).toBe(fixture('10-calico.conflist'));
    await readyzLists(port, '10-calico.conf', 'conflict');

    expect(readFileSync(path.join(host.binDir, 'linkerd-cni'), 'utf8')).toContain('linkerd-cni');
    expect(statSync(path.join(host.binDir, 'linkerd-cni')).mode & 0o777).toBe(0o755);
    const kubeconfig = host.net('ZZZ-linkerd-cni-kubeconfig');
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    expect(parse(readFileSync(kubeconfig, 'utf8')).users[0].user.token).toBe('token-1');

    const order = daemon.logs.items.map((l) => l.msg);
    expect(order.indexOf('installed plugin binaries')).toBeLessThan(order.indexOf('watching config directory'));
    expect(order.indexOf('wrote kubeconfig')).toBeLessThan(order.indexOf('watching config directory'));
    expect(order.indexOf('watching config directory')).toBeLessThan(order.indexOf('chained plugin into config'));
    expect(await host.cli(['check'])).toMatchObject({ code: 0 });
  });

  it('chains a file written at any moment during start-up (20 starts)', async () => {
    for (let i = 0; i < 20; i++) {
      const host = new NodeHost({ token: false });
      const daemon = host.start();
      // The file lands somewhere between process start and well after the first scan.
      await new Promise((resolve) => setTimeout(resolve, (i * 7) % 120));
      host.putFixture('10-flannel.conflist');
      await waitFor(() => host.isChained('10-flannel.conflist'), `the file chained in start ${i}`);
      await daemon.stop('SIGKILL');
    }
  });

  it('does not rewrite anything on a restart', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const first = await host.started();
    await waitFor(() => host.isChained('10-calico.conflist'), 'chained');
    await first.stop('SIGKILL');
    const before = statSync(host.net('10-calico.conflist'));
    const kubeBefore = statSync(host.net('ZZZ-linkerd-cni-kubeconfig'));
    const binBefore = statSync(path.join(host.binDir, 'linkerd-cni'));
    const second = await host.started();
    await second.stop('SIGKILL');
    const after = statSync(host.net('10-calico.conflist'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
    const kubeAfter = statSync(host.net('ZZZ-linkerd-cni-kubeconfig'));
    expect([kubeAfter.ino, kubeAfter.mtimeMs]).toEqual([kubeBefore.ino, kubeBefore.mtimeMs]);
    expect(statSync(path.join(host.binDir, 'linkerd-cni')).ino).toBe(binBefore.ino);
  });

  it('waits for a missing net.d, then watches it once it is created', async () => {
    const host = new NodeHost({ netDir: false });
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    expect((await probe(port, '/readyz')).body).toContain('/etc/cni/net.d does not resolve inside the host root (ENOENT at /etc)');
    mkdirSync(host.netDir, { recursive: true });
    host.putFixture('10-aws.conflist');
    await waitFor(() => host.isChained('10-aws.conflist'), 'chained after net.d appeared');
    await waitFor(() => existsSync(host.net('ZZZ-linkerd-cni-kubeconfig')), 'kubeconfig written once net.d exists');
  });

  it('waits through several missing levels (/etc and /etc/cni do not exist either)', async () => {
    const host = new NodeHost({ netDir: false });
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    // /readyz names the missing level the watch waits on, one level further each time.
    const waiting = (missing: string) =>
      waitFor(async () => (await probe(port, '/readyz')).body.includes(`(ENOENT at ${missing})`), `/readyz: waiting for ${missing}`);
    await waiting('/etc');
    mkdirSync(path.dirname(path.dirname(host.netDir)));
    await waiting('/etc/cni');
    mkdirSync(path.dirname(host.netDir));
    await waiting('/etc/cni/net.d');
    mkdirSync(host.netDir);
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
  });

  it('writes no kubeconfig outside a pod (no token)', async () => {
    const host = new NodeHost({ token: false });
    host.putFixture('10-flannel.conflist');
    await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(existsSync(host.net('ZZZ-linkerd-cni-kubeconfig'))).toBe(false);
  });
});

describe('bad input at start', () => {
  it.each([
    ['HEALTH_PORT', 'ninety'],
    ['CONTAINER_MOUNT_PREFIX', 'relative/path'],
    ['WATCH_BACKEND', 'polling'],
    ['CNI_NETWORK_CONFIG_FILE', 'not/absolute'],
  ])('exits 2 naming %s', async (name, value) => {
    const host = new NodeHost();
    const result = await host.cli(['run'], { [name]: value });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^cni-chainer: invalid configuration: ${name}: `, 'm'));
  });

  it('exits 2 when no plugin config is given', async () => {
    const host = new NodeHost();
    const result = await host.cli(['run'], { CNI_NETWORK_CONFIG_FILE: '' });
    expect(result).toMatchObject({ code: 2 });
    expect(result.stderr).toContain('CNI_NETWORK_CONFIG: required');
  });

  it('exits 2 when a token exists but KUBERNETES_SERVICE_HOST is not set', async () => {
    const host = new NodeHost();
    const result = await host.cli(['run'], { KUBERNETES_SERVICE_HOST: '' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('KUBERNETES_SERVICE_HOST');
  });

  it('exits 2 on an unknown argument, 0 on --help and --version', async () => {
    const host = new NodeHost();
    expect((await host.cli(['frobnicate'])).code).toBe(2);
    expect(await host.cli(['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: cni-chainer') });
    expect(await host.cli(['--version'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/) });
  });

  const canUnshare = spawnSync('unshare', ['-Ur', 'true']).status === 0;
  itWith(canUnshare, 'user namespaces (unshare -Ur)')('exits 1 naming the sysctl when the inotify instance limit is reached', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const env = Object.entries(host.env()).map(([k, v]) => `${k}=${v}`);
    const result = await runProcess('unshare', ['-Ur', 'sh', '-c', 'echo 0 > /proc/sys/user/max_inotify_instances && exec env "$@"', 'sh', ...env, process.execPath, cliFile, 'run']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('fs.inotify.max_user_instances');
    expect(result.stdout).not.toContain('"msg":"started"');
    expect(host.holdsPlugin('10-flannel.conflist')).toBe(false);
  });

  it('leaves the config alone when the plugin binary directory is missing', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const result = await host.cli(['run'], { CONTAINER_CNI_BIN_DIR: '/nonexistent-bin-dir' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('cni-chainer: invalid configuration: CONTAINER_CNI_BIN_DIR: /nonexistent-bin-dir: ENOENT (the plugin binaries to install must be there)\n');
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });
});

describe('health endpoints', () => {
  it('serves /healthz, /readyz and /metrics', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    host.put('20-broken.conflist', '{"plugins": [');
    const port = 20_000 + (process.pid % 20_000);
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const get = async (p: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${p}`);
      return { status: res.status, body: await res.text() };
    };
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok\n' });
    const notReady = await waitFor(async () => {
      const r = await get('/readyz');
      return r.body.includes('20-broken.conflist') && r;
    }, 'readyz naming the broken file');
    expect(notReady.status).toBe(503);
    expect(notReady.body).toContain('20-broken.conflist: invalid');
    host.put('20-broken.conflist', fixture('10-flannel.conflist'));
    await waitFor(async () => (await get('/readyz')).status === 200, 'ready once the file is valid and chained');
    const metrics = (await get('/metrics')).body;
    expect(metrics).toMatch(/^cni_chainer_patches_total 2$/m);
    expect(metrics).toMatch(/^cni_chainer_parse_errors_total 1$/m);
    expect(metrics).toMatch(/^cni_chainer_ready 1$/m);
    expect(metrics).toMatch(/^cni_chainer_events_total\{kind="moved-in"\} \d+$/m);
    expect(metrics).toMatch(/^cni_chainer_patch_latency_seconds_count 2$/m);
    expect(metrics).toMatch(/^cni_chainer_kubeconfig_writes_total 1$/m);
    expect(metrics).toMatch(/^cni_chainer_build_info\{version="\d+\.\d+\.\d+",backend="native",node="v\d+/m);
    expect((await get('/nope')).status).toBe(404);
    await daemon.stop();
  });

  it('keeps running when the Prometheus exposition file is missing: /metrics answers 500 until it is there', async () => {
    // An image built without dist/cni-chainer-prometheus.mjs (scripts/bundle.mjs): the scrape that
    // loads it fails, and must not take the agent down with it.
    const app = tempDir('cni-chainer-app-');
    mkdirSync(path.join(app, 'dist'));
    copyFileSync(cliFile, path.join(app, 'dist', 'cni-chainer.mjs'));
    symlinkSync(path.join(repoRoot, 'build'), path.join(app, 'build'));
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const port = 20_000 + ((process.pid + 7) % 20_000);
    const daemon = host.start({ HEALTH_PORT: String(port) }, ['run'], [], path.join(app, 'dist', 'cni-chainer.mjs'));
    await daemon.ready();
    const get = async (p: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${p}`);
      return { status: res.status, body: await res.text() };
    };
    const failed = await get('/metrics');
    expect(failed.status).toBe(500);
    expect(failed.body).toContain('cni-chainer-prometheus.mjs');
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect((await get('/readyz')).status).toBe(200);
    expect(host.isChained('10-calico.conflist')).toBe(true);
    copyFileSync(path.join(repoRoot, 'dist', 'cni-chainer-prometheus.mjs'), path.join(app, 'dist', 'cni-chainer-prometheus.mjs'));
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^cni_chainer_patches_total 1$/m);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });
});
