// What a SIGTERM does, decided by the API server's answers about this pod's DaemonSet (docs/design.md,
// Stop), against a server giving the answers the API server gives (test/fixtures/api/); and without
// an API server, the hand-over to an instance standing by. The real CLI, real files.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DAEMONSET, POD, RecordedApi, type Answer } from '../helpers/api-answers.js';
import { fixture } from '../helpers/fixtures.js';
import { NodeHost } from '../helpers/node-host.js';
import { waitFor } from '../helpers/wait.js';

const CONFIG = '10-flannel.conflist';

async function stopWith(answers: Record<string, Answer>, extra: NodeJS.ProcessEnv = {}) {
  const api = await new RecordedApi(answers).start();
  const host = new NodeHost();
  host.putFixture(CONFIG);
  const daemon = await host.started({ ...api.env(), ...extra });
  await waitFor(() => host.isChained(CONFIG), 'chained');
  const started = Date.now();
  const exit = await daemon.stop();
  return { host, api, exit, ms: Date.now() - started, daemon };
}

const binary = (host: NodeHost) => existsSync(path.join(host.binDir, 'linkerd-cni'));

describe('SIGTERM asks the API server: uninstall or replacement', () => {
  it('the DaemonSet is gone: an uninstall, the node byte-identical', async () => {
    const { host, api, exit } = await stopWith({ [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 404, fixture: 'not-found.json' } });
    expect(exit.code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
    expect(existsSync(host.net('ZZZ-linkerd-cni-kubeconfig'))).toBe(false);
    // With the pod's own token, as the service account.
    expect(api.requests.map((r) => r.authorization)).toEqual(['Bearer token-1', 'Bearer token-1']);
  });

  it('the DaemonSet is being deleted: an uninstall', async () => {
    const { host, exit } = await stopWith({ [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 200, fixture: 'daemonset-deleting.json' } });
    expect(exit.code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
  });

  it('the DaemonSet is there (a restart, rollout, eviction or drain): configs, binary and kubeconfig stay', async () => {
    const { host, exit, daemon } = await stopWith({ [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 200, fixture: 'daemonset.json' } });
    expect(exit.code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    expect(existsSync(host.net('ZZZ-linkerd-cni-kubeconfig'))).toBe(true);
    expect(daemon.logs.items.find((l) => l.msg === 'stopping without unchaining: the node stays chained')?.reason).toContain('still exists');
  });

  it("the account may no longer read its pod (403: deploy/'s RBAC deleted): an uninstall, since the plugin it shares would fail every ADD", async () => {
    const { host, exit, daemon } = await stopWith({ [POD]: { status: 403, fixture: 'forbidden.json' } });
    expect(exit.code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
    expect(daemon.logs.items.find((l) => l.msg === 'uninstalling: removing the plugin from every config')?.reason).toContain('403');
  });

  it('the DaemonSet cannot be read (403) while the pod can: everything stays, and the log says why', async () => {
    const { host, exit, daemon } = await stopWith({ [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 403, fixture: 'forbidden.json' } });
    expect(exit.code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    expect(daemon.logs.items.find((l) => l.msg === 'stopping without unchaining: the node stays chained')?.reason).toContain('403');
  });

  it('the API server fails (500): everything stays', async () => {
    const { host, exit } = await stopWith({ [POD]: { status: 500, fixture: 'forbidden.json' } });
    expect(exit.code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
  });

  it('the API server does not answer: everything stays, and the stop keeps its deadline', async () => {
    const { host, exit, ms } = await stopWith({ [POD]: 'no answer' }, { SHUTDOWN_TIMEOUT_S: '8' });
    expect(exit.code).toBe(0);
    expect(host.isChained(CONFIG)).toBe(true);
    expect(binary(host)).toBe(true);
    // One request timed out at a quarter of the deadline (2 s), well within it.
    expect(ms).toBeLessThan(8_000);
  });

  it('CLEANUP_ON_STOP=always uninstalls and never asks; never keeps and never asks', async () => {
    const always = await stopWith({}, { CLEANUP_ON_STOP: 'always' });
    expect(always.host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(always.api.requests).toEqual([]);
    const never = await stopWith({}, { CLEANUP_ON_STOP: 'never' });
    expect(never.host.isChained(CONFIG)).toBe(true);
    expect(never.api.requests).toEqual([]);
  });
});

describe('without an API server', () => {
  it('hands the node to an instance standing by without unchaining it, sampled every 20 ms', async () => {
    const host = new NodeHost({ token: false });
    host.putFixture(CONFIG);
    const older = await host.started();
    await waitFor(() => host.isChained(CONFIG), 'chained');
    const newer = await host.started();
    await older.waitLog((l) => typeof l.msg === 'string' && l.msg.startsWith('a newer instance has taken over'));
    let unchainedSamples = 0;
    const sampler = setInterval(() => {
      if (!host.isChained(CONFIG)) unchainedSamples++;
    }, 20);
    try {
      expect((await newer.stop()).code).toBe(0);
      await older.waitLog((l) => typeof l.msg === 'string' && l.msg.startsWith('the instance that had taken over this node is gone'));
      // The older one maintains the node again: a config that appears now is chained.
      host.putFixture('10-aws.conflist');
      await waitFor(() => host.isChained('10-aws.conflist'), 'chained by the instance that took the node back');
    } finally {
      clearInterval(sampler);
    }
    expect(unchainedSamples).toBe(0);
    expect(newer.logs.items.find((l) => l.msg === 'stopping without unchaining: the node stays chained')?.reason).toContain('stands by');
    // The last one out cleans up.
    expect((await older.stop()).code).toBe(0);
    expect(host.read(CONFIG)).toBe(fixture(CONFIG));
    expect(binary(host)).toBe(false);
  });
});
