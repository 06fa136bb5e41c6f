// A stop beside another installer of the same plugin, or under a newer instance (docs/design.md, Stop
// and uninstall): no teardown removes the binary or the kubeconfig while a config the runtime may load
// names the plugin, or while another instance owns the node. linkerd's own installer is the stand-in
// written from its documented behaviour (test/stand-ins/linkerd-install-cni.mjs); the node's files are
// sampled every 20 ms all through, by a process of its own.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/addon-path.js';
import { DAEMONSET, POD, RecordedApi } from '../../helpers/api-answers.js';
import { pluginFile } from '../../helpers/fixtures.js';
import { NodeHost, DaemonProcess } from '../../helpers/node-host.js';
import { oneWindow, sampleNode, type NodeSamples } from '../../helpers/node-sampler.js';
import { waitFor } from '../../helpers/wait.js';

const CONFIG = '10-flannel.conflist';
const STAND_IN = path.join(repoRoot, 'test', 'stand-ins', 'linkerd-install-cni.mjs');

/** linkerd's installer, as its pod would run it on this node. */
function linkerdInstaller(host: NodeHost): DaemonProcess {
  const child = spawn(process.execPath, [STAND_IN], {
    env: { ...host.env(), CNI_NETWORK_CONFIG: readFileSync(pluginFile, 'utf8'), CNI_NETWORK_CONFIG_FILE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new DaemonProcess(child);
}

describe('a rollback to linkerd\'s own installer (maxSurge: it starts beside this agent, which then stops)', () => {
  it.each([1, 2, 3])('without an API server (linkerd\'s chart sets no POD_NAME): the binary and kubeconfig stay for the configs it chains again (run %i)', async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const ours = await host.started();
    await waitFor(() => host.isChained(CONFIG), 'chained');
    const theirs = linkerdInstaller(host);
    await theirs.waitLog('started');
    const sampler = await sampleNode(host.net(CONFIG), path.join(host.binDir, 'linkerd-cni'), 'linkerd-cni');
    try {
      expect((await ours.stop()).code).toBe(0);
      await waitFor(() => host.holdsPlugin(CONFIG), 'chained by linkerd\'s installer');
    } finally {
      const samples = await sampler.stop();
      console.log(`rollback to linkerd's installer: ${samples.count} samples, ${samples.unchained.length} unchained, ${samples.missingBinary.length} naming a missing binary`);
      expect(samples.missingBinary).toEqual([]);
    }
    expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(true);
    expect(existsSync(host.net('ZZZ-linkerd-cni-kubeconfig'))).toBe(true);
    expect(ours.stopReason('kept-binaries')).toMatch(/another installer chained the plugin again into 10-flannel.conflist/);
    // Its own stop then takes everything out, as it does.
    expect((await theirs.stop()).code).toBe(0);
    expect(host.holdsPlugin(CONFIG)).toBe(false);
    expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(false);
  });
});

describe('an older instance whose stop is decided while a newer one claims the node', () => {
  it('does not tear down under the new owner: the verdict comes after the claim, and ownership is asked again', async () => {
    // The DaemonSet's answer comes 3 s late and says it is gone: an uninstall, decided after the new
    // instance claimed the node.
    const api = await new RecordedApi({ [POD]: { status: 200, fixture: 'pod.json' }, [DAEMONSET]: { status: 404, fixture: 'not-found.json', delayMs: 3_000 } }).start();
    const host = new NodeHost();
    host.putFixture(CONFIG);
    const older = await host.started(api.env());
    await waitFor(() => api.requests.some((r) => `${r.method} ${r.url}` === POD), 'the owner learned');
    const sampler = await sampleNode(host.net(CONFIG), path.join(host.binDir, 'linkerd-cni'), 'linkerd-cni');
    const stopped = older.stop();
    await waitFor(() => api.requests.some((r) => `${r.method} ${r.url}` === DAEMONSET), 'the stop asking');
    const newer = await host.started({ CLEANUP_ON_STOP: 'never' });
    const exit = await stopped;
    const samples = await sampler.stop();
    expect(exit.code).toBe(0);
    expect(older.stopSteps().map((s) => s.step)).toEqual(['taken-over']);
    expect(samples.unchained).toEqual([]);
    expect(samples.missingBinary).toEqual([]);
    expect(host.isChained(CONFIG)).toBe(true);
    expect((await newer.stop()).code).toBe(0);
  });
});

describe("linkerd's installer stops while this agent runs (the surge switch to cni-chainer)", () => {
  // Its stop writes every config it patched in place, unchained, then removes the kubeconfig and the
  // binary: nothing can keep that from being seen for the moment it takes the agent to undo it. What
  // the agent owes is to undo it at once: one write of the config, the binary back from its spare
  // hard link (a rename, no copy), the kubeconfig written again. The windows, sampled every
  // millisecond, are logged (docs/decisions.md has the figures); their bound is the bench's business.
  it.each([1, 2, 3])('its unchain, and its removal of the binary and the kubeconfig, are undone at once (run %i)', async () => {
    const host = new NodeHost();
    host.putFixture(CONFIG);
    mkdirSync(host.binDir, { recursive: true });
    const theirs = linkerdInstaller(host);
    await theirs.waitLog('started');
    await waitFor(() => host.holdsPlugin(CONFIG), "chained by linkerd's installer");
    const ours = await host.started();
    const sampler = await sampleNode(host.net(CONFIG), path.join(host.binDir, 'linkerd-cni'), 'linkerd-cni', 1);
    let samples: NodeSamples | undefined;
    const installed = statSync(path.join(host.binDir, 'linkerd-cni')).ino;
    try {
      expect((await theirs.stop()).code).toBe(0);
      await waitFor(() => host.isChained(CONFIG) && existsSync(path.join(host.binDir, 'linkerd-cni')) && existsSync(host.net('ZZZ-linkerd-cni-kubeconfig')), 'everything back');
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      samples = await sampler.stop();
      console.log(`linkerd's installer stops beside this agent: ${samples.count} samples (1 ms), unchained over ${span(samples.unchained)} ms, naming a missing binary over ${span(samples.missingBinary)} ms`);
    }
    // Each is one window, closed: nothing flips back and forth.
    expect(oneWindow(samples, 'unchained')).toBe(true);
    expect(oneWindow(samples, 'missingBinary')).toBe(true);
    expect(host.isChained(CONFIG)).toBe(true);
    // The binary is the one installed, back from its spare, not a copy made since.
    expect(statSync(path.join(host.binDir, 'linkerd-cni')).ino).toBe(installed);
    expect((await ours.stop()).code).toBe(0);
  });
});

/** How long the samples `times` (1 ms apart when contiguous) cover. */
const span = (times: number[]) => (times.length === 0 ? 0 : times.at(-1)! - times[0]! + 1);
