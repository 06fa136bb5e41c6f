// The daemon's install flow and teardown, in process: what readiness says at the moments between
// the steps, which a child process cannot be held at.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig, requirePlugin } from '../../src/config.js';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { Daemon, StartStepError } from '../../src/daemon/lifecycle/daemon.js';
import { NodeHost } from '../helpers/node-host.js';

function daemonOn(host: NodeHost, extra: NodeJS.ProcessEnv = {}): Daemon {
  const config = loadConfig(host.env(extra));
  return new Daemon(config, requirePlugin(config), pino({ level: 'silent' }), new Metrics('test', config.backend));
}

describe('the daemon in process', () => {
  it('is not ready from the moment stop begins: the configs are being unchained', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const daemon = daemonOn(host);
    expect(daemon.readiness.report()).toMatchObject({ ready: false, reasons: ['starting'] });
    await daemon.start();
    expect(daemon.readiness.report()).toMatchObject({ ready: true, reasons: [] });
    expect(host.isChained('10-calico.conflist')).toBe(true);
    const stopping = daemon.stop();
    // Still chained on disk at this moment, and yet not ready: nothing new may be scheduled here.
    expect(host.isChained('10-calico.conflist')).toBe(true);
    expect(daemon.readiness.report()).toMatchObject({ ready: false, reasons: ['stopping'] });
    expect((await stopping).cleaned).toBe(true);
    expect(daemon.readiness.report().ready).toBe(false);
    expect(host.holdsPlugin('10-calico.conflist')).toBe(false);
  });

  it('a failed start names its step, and keeps the cause', async () => {
    const host = new NodeHost();
    // The host's bin dir is a regular file: no binary can be installed there.
    mkdirSync(path.join(host.hostRoot, 'opt/cni/blocked'), { recursive: true });
    writeFileSync(path.join(host.hostRoot, 'opt/cni/blocked/bin'), 'not a directory');
    const daemon = daemonOn(host, { DEST_CNI_BIN_DIR: '/opt/cni/blocked/bin' });
    const failure = await daemon.start().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(StartStepError);
    expect((failure as StartStepError).step).toBe('2. install the plugin binaries');
    expect((failure as StartStepError).code).toMatch(/^(ENOTDIR|EEXIST)$/);
    await daemon.stop();
  });
});
