// What the agent installs beside the configs: the kubeconfig (rewritten when the token rotates, put
// back when deleted) and the plugin binary (an image without it chains nothing).
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, metric, NodeHost, probe } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

describe('kubeconfig', () => {
  it('is rewritten when the service-account token rotates (..data swap)', async () => {
    const host = new NodeHost({ token: false });
    // The kubelet's layout: ..data -> ..<timestamp>/, token -> ..data/token.
    const sa = host.saDir;
    mkdirSync(path.join(sa, '..2026_12_02_01'));
    writeFileSync(path.join(sa, '..2026_12_02_01', 'token'), 'first-token');
    writeFileSync(path.join(sa, '..2026_12_02_01', 'ca.crt'), 'CA1');
    symlinkSync('..2026_12_02_01', path.join(sa, '..data'));
    symlinkSync('..data/token', path.join(sa, 'token'));
    symlinkSync('..data/ca.crt', path.join(sa, 'ca.crt'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const kubeconfig = () => parse(readFileSync(host.net('ZZZ-linkerd-cni-kubeconfig'), 'utf8'));
    expect(kubeconfig().users[0].user.token).toBe('first-token');
    mkdirSync(path.join(sa, '..2026_12_02_02'));
    writeFileSync(path.join(sa, '..2026_12_02_02', 'token'), 'second-token');
    writeFileSync(path.join(sa, '..2026_12_02_02', 'ca.crt'), 'CA1');
    symlinkSync('..2026_12_02_02', path.join(sa, '..data_tmp'));
    renameSync(path.join(sa, '..data_tmp'), path.join(sa, '..data'));
    await waitFor(() => kubeconfig().users[0].user.token === 'second-token', 'kubeconfig with the new token');
    expect(kubeconfig().clusters[0].cluster['certificate-authority-data']).toBe(Buffer.from('CA1').toString('base64'));
    // Written once at start and once for the new token: the rotation's several events make one write.
    await new Promise((r) => setTimeout(r, 500));
    expect(await metric(port, 'cni_chainer_kubeconfig_writes_total')).toBe(2);
    await daemon.stop();
  });

  it('is written back when deleted, and uses brackets for an IPv6 API server', async () => {
    const host = new NodeHost();
    await host.started({ KUBERNETES_SERVICE_HOST: 'fd00:10:96::1' });
    const file = host.net('ZZZ-linkerd-cni-kubeconfig');
    expect(parse(readFileSync(file, 'utf8')).clusters[0].cluster.server).toBe('https://[fd00:10:96::1]:443');
    await import('node:fs').then((fs) => fs.rmSync(file));
    await waitFor(() => existsSync(file), 'kubeconfig back');
  });
});

describe('an image without the plugin binary', () => {
  it.each(['in-place', 'owned'])('%s mode: chains nothing, not ready naming the file and CONTAINER_CNI_BIN_DIR; check agrees', async (mode) => {
    const host = new NodeHost();
    (await import('node:fs')).rmSync(path.join(host.containerBin, 'linkerd-cni'));
    writeFileSync(path.join(host.containerBin, 'other-plugin'), '#!/bin/sh\n', { mode: 0o755 });
    host.putFixture(CALICO);
    const port = await freePort();
    const env = { HEALTH_PORT: String(port), CNI_PATCH_MODE: mode };
    const daemon = await host.started(env);
    const r = await probe(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('linkerd-cni is not in CONTAINER_CNI_BIN_DIR');
    host.put(CALICO, fixture(CALICO).replace('"mtu": 0', '"mtu": 1'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(host.carriers()).toEqual([]);
    const check = await host.cli(['check'], env);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('not in CONTAINER_CNI_BIN_DIR');
    await daemon.stop();
  });

  it('a binary that went missing on the host is put back before any config is chained again', async () => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    const daemon = await host.started();
    await waitFor(() => host.isChained(CALICO), 'chained');
    const binary = path.join(host.binDir, 'linkerd-cni');
    writeFileSync(binary, 'not the plugin'); // replaced in place by someone else
    await waitFor(() => readFileSync(binary, 'utf8') === readFileSync(path.join(host.containerBin, 'linkerd-cni'), 'utf8'), 'reinstalled');
    host.put(CALICO, fixture(CALICO).replace('"mtu": 0', '"mtu": 2'));
    await waitFor(() => host.isChained(CALICO) && host.read(CALICO).includes('"mtu": 2'), 're-chained with the binary back');
    await daemon.stop();
  });
});
