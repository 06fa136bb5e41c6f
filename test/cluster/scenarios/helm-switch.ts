// The switch from linkerd's own installer and back, as linkerd's operators would make it (docs/design.md,
// Installing as linkerd's users do): a release of the linkerd2-cni chart (the stand-in shaped like it,
// test/stand-ins/linkerd2-cni-chart, running the stand-in installer) is upgraded in place to
// charts/cni-chainer with `helm upgrade`, rolled back with `helm rollback`, and uninstalled, with each
// strategy, sampled all along (test/cluster/sampled.ts).
//
// The primary's conflist is written as linkerd's installer writes JSON (two-space indents, no newline
// at the end): its rewrites of the file are then a fixed point, and the node can be compared byte for
// byte with what it was before the first install.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/addon-path.js';
import { waitFor } from '../../helpers/wait.js';
import { helmOnNode } from '../helm-on-node.js';
import { oneWindow } from '../../helpers/node-sampler.js';
import { sampledWhile } from '../sampled.js';
import { cp, json, kubectlAsync, namespaceGone, NS, ns, PRIMARY, PRIMARY_NAME, primaryBins, reason } from '../single-node.js';

const RELEASE = 'linkerd2-cni';
const LINKERD_CHART = path.join(repoRoot, 'test', 'stand-ins', 'linkerd2-cni-chart');
const OUR_CHART = path.join(repoRoot, 'charts', 'cni-chainer');
/** The README's switch: the new pod starts beside the old one. */
const SURGE = ['--set', 'updateStrategy.rollingUpdate.maxSurge=1', '--set', 'updateStrategy.rollingUpdate.maxUnavailable=0'];
/** linkerd2-cni's default strategy. */
const NO_SURGE = ['--set', 'updateStrategy.type=RollingUpdate', '--set', 'updateStrategy.rollingUpdate.maxUnavailable=1'];
const LINKERD_FORM = JSON.stringify(JSON.parse(PRIMARY), null, 2);

interface InstallerPod {
  name: string;
  image: string;
  ready: boolean;
}

/** The pods of the DaemonSet linkerd-cni, whichever installer they run. */
function installerPods(): InstallerPod[] {
  type Pod = { metadata: { name: string; deletionTimestamp?: string }; spec: { containers: Array<{ image: string }> }; status: { conditions?: Array<{ type: string; status: string }> } };
  return json<{ items: Pod[] }>(['get', 'pods', '-n', NS, '-l', 'k8s-app=linkerd-cni']).items.map((p) => ({
    name: p.metadata.name,
    image: p.spec.containers[0]!.image,
    ready: p.metadata.deletionTimestamp === undefined && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
  }));
}

/** Waits until the node runs one installer pod, of `image`, Ready. */
async function runsOnly(image: RegExp): Promise<void> {
  await waitFor(() => {
    const pods = installerPods();
    return pods.length === 1 && image.test(pods[0]!.image) && pods[0]!.ready;
  }, `only ${String(image)} running`, 180_000);
}

const chainedNow = () => /"type"\s*:\s*"linkerd-cni"/.test(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8'));

const rolledOut = () => kubectlAsync(['rollout', 'status', '-n', NS, 'daemonset/linkerd-cni', '--timeout=180s']);

function nodeAsBefore(): void {
  expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
  expect(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8')).toBe(LINKERD_FORM);
  expect(readdirSync(ns.binDir).sort()).toEqual(primaryBins);
}

async function uninstall(): Promise<void> {
  await helmOnNode(['uninstall', RELEASE, '--namespace', NS, '--wait', '--timeout', '180s']);
  await waitFor(() => installerPods().length === 0, 'no installer pod', 120_000);
}

describe.skipIf(reason !== undefined)("switching from linkerd's installer with Helm, and back", () => {
  beforeAll(() => {
    writeFileSync(path.join(ns.netDir, PRIMARY_NAME), LINKERD_FORM);
    cp.kubectl(['create', 'namespace', NS]);
    // As linkerd's docs have operators label it: hostPath volumes need the privileged level.
    cp.kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=privileged']);
  });

  afterAll(async () => {
    cp.kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']);
    writeFileSync(path.join(ns.netDir, PRIMARY_NAME), PRIMARY);
    // The next suite applies its own objects into this namespace: not while it is terminating.
    await namespaceGone();
  }, 180_000);

  // linkerd's installer, stopping beside cni-chainer at the end of the surge, writes every config it
  // patched in place unchained and removes the binary and the kubeconfig: the agent undoes each at once
  // (one write; the binary's spare renamed back), and that moment is the one window there is.
  it("helm upgrade of a linkerd2-cni release to cni-chainer with maxSurge 1 (the README's switch): one window at most, while linkerd's installer stops, undone at once", async () => {
    await helmOnNode(['install', RELEASE, LINKERD_CHART, '--namespace', NS]);
    await runsOnly(/linkerd-installer-standin/);
    await waitFor(chainedNow, "chained by linkerd's installer", 60_000);
    const { samples, missing } = await sampledWhile('upgrade from linkerd2-cni, maxSurge 1', async () => {
      await helmOnNode(['upgrade', RELEASE, OUR_CHART, '--namespace', NS, ...SURGE]);
      await rolledOut();
      await runsOnly(/cni-chainer/);
    });
    expect(oneWindow(samples, 'missingBinary')).toBe(true);
    expect(oneWindow(samples, 'unchained')).toBe(true);
    expect(chainedNow()).toBe(true);
    // A pod whose sandbox came in that window may start unmeshed; every other one is meshed.
    expect(missing.length).toBeLessThanOrEqual(1);
  }, 600_000);

  it("helm rollback to linkerd's installer (its own maxUnavailable 1): never unchained, never a config naming a missing binary", async () => {
    const { samples } = await sampledWhile('rollback to linkerd2-cni, maxUnavailable 1', async () => {
      await helmOnNode(['rollback', RELEASE, '1', '--namespace', NS]);
      await rolledOut();
      await runsOnly(/linkerd-installer-standin/);
    });
    expect(samples.missingBinary).toEqual([]);
    expect(samples.unchained).toEqual([]);
  }, 600_000);

  it("helm upgrade with linkerd's maxUnavailable 1: one window, from linkerd's installer's stop to cni-chainer's start; never a config naming a missing binary", async () => {
    const { samples } = await sampledWhile('upgrade from linkerd2-cni, maxUnavailable 1', async () => {
      await helmOnNode(['upgrade', RELEASE, OUR_CHART, '--namespace', NS, ...NO_SURGE]);
      await rolledOut();
      await runsOnly(/cni-chainer/);
    });
    expect(samples.missingBinary).toEqual([]);
    expect(oneWindow(samples, 'unchained')).toBe(true);
    expect(chainedNow()).toBe(true);
  }, 600_000);

  it('helm uninstall: the node as it was before the first install, byte for byte', async () => {
    await uninstall();
    nodeAsBefore();
  }, 300_000);

  it("linkerd's installer with a surge, upgraded with maxUnavailable 1, rolled back (a surge), uninstalled: never a config naming a missing binary, the rollback never unchained", async () => {
    await helmOnNode(['install', RELEASE, LINKERD_CHART, '--namespace', NS, ...SURGE]);
    await runsOnly(/linkerd-installer-standin/);
    await waitFor(chainedNow, "chained by linkerd's installer", 60_000);
    const upgrade = await sampledWhile('upgrade from linkerd2-cni (installed with a surge), maxUnavailable 1', async () => {
      await helmOnNode(['upgrade', RELEASE, OUR_CHART, '--namespace', NS, ...NO_SURGE]);
      await rolledOut();
      await runsOnly(/cni-chainer/);
    });
    expect(upgrade.samples.missingBinary).toEqual([]);
    expect(oneWindow(upgrade.samples, 'unchained')).toBe(true);
    const rollback = await sampledWhile('rollback to linkerd2-cni, maxSurge 1', async () => {
      await helmOnNode(['rollback', RELEASE, '1', '--namespace', NS]);
      await rolledOut();
      await runsOnly(/linkerd-installer-standin/);
    });
    expect(rollback.samples.missingBinary).toEqual([]);
    expect(rollback.samples.unchained).toEqual([]);
    await uninstall();
    nodeAsBefore();
  }, 900_000);
});
