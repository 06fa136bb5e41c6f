// One clear line, naming the variable or the path, and the right exit code: what a new user sees when
// the node or the configuration is not what the agent expects. The real CLI as a child process. (net.d
// as a regular file: test/integration/hostile/configuration.test.ts, 17.)
import { chmodSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFile } from '../../helpers/addon-path.js';
import { freePort, NodeHost } from '../../helpers/node-host.js';
import { runProcess } from '../../helpers/run-node.js';

// Root passes any permission check while it holds CAP_DAC_OVERRIDE (and CAP_DAC_READ_SEARCH): without
// them, as the deployment runs, a mode-000 net.d cannot be read.
const dropDac = process.getuid?.() === 0 ? ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search'] : [];

function cliWithoutDac(host: NodeHost, args: string[]) {
  const [command, ...rest] = [...dropDac, process.execPath, cliFile, ...args];
  return runProcess(command!, rest, { env: host.env() });
}

describe('messages', () => {
  it('check with an unreadable net.d: one line naming the path and the code, no stack trace, exit 1', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    chmodSync(host.netDir, 0o000);
    try {
      const check = await cliWithoutDac(host, ['check']);
      expect(check.code).toBe(1);
      expect(check.stdout).toBe('/etc/cni/net.d: cannot be read: EACCES\nnot chained: no CNI config can be read\n');
      expect(check.stderr).toBe('');
    } finally {
      chmodSync(host.netDir, 0o755);
    }
  });

  it('uninstall that cannot look into net.d: incomplete, exit 1, the binary kept', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const daemon = await host.started();
    await daemon.stop('SIGKILL');
    chmodSync(host.netDir, 0o000);
    try {
      const uninstall = await cliWithoutDac(host, ['uninstall']);
      expect(uninstall.code).toBe(1);
      expect(uninstall.stderr).toContain('uninstall incomplete');
      expect(uninstall.stderr).toContain('/etc/cni/net.d (cannot be listed: EACCES)');
      expect(uninstall.stdout).not.toContain('"uninstalled"');
    } finally {
      chmodSync(host.netDir, 0o755);
    }
    expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(true);
    expect(host.holdsPlugin('10-calico.conflist')).toBe(true);
  });

  it('a missing CONTAINER_CNI_BIN_DIR: exit 2 naming the variable', async () => {
    const host = new NodeHost();
    rmSync(host.containerBin, { recursive: true });
    const run = await host.cli(['run']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`cni-chainer: invalid configuration: CONTAINER_CNI_BIN_DIR: ${host.containerBin}: ENOENT (the plugin binaries to install must be there)\n`);
    writeFileSync(host.containerBin, '');
    const file = await host.cli(['run']);
    expect(file.code).toBe(2);
    expect(file.stderr).toBe(`cni-chainer: invalid configuration: CONTAINER_CNI_BIN_DIR: ${host.containerBin} is not a directory\n`);
  });

  it.each([
    ['POD_NAME without NODE_NAME', { POD_NAME: 'linkerd-cni-x7k2p', POD_NAMESPACE: 'linkerd-cni' }, /^NODE_NAME is not set \(POD_NAME is\): the startup taint is never removed/],
    ['NODE_NAME without POD_NAME', { NODE_NAME: 'node-1' }, /^POD_NAME is not set \(NODE_NAME is\): a stop cannot ask which DaemonSet runs this agent/],
  ])('%s: one line at start naming the variable, and readiness as true as ever', async (_, env, line) => {
    const host = new NodeHost({ token: false });
    host.putFixture('10-calico.conflist');
    const port = await freePort();
    const daemon = await host.started({ ...env, HEALTH_PORT: String(port) });
    const warnings = daemon.logs.items.filter((l) => typeof l.msg === 'string' && line.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe(40);
    await daemon.ready(); // ready: every config chained
    expect((await daemon.stop()).code).toBe(0);
  });
});
