// The node outlives the agent's pod (docs/design.md, The node's credential; Stop): a forced delete, a
// graceful delete whose replacement takes 20 s to start (maxUnavailable 1, no surge: linkerd's
// default), a DaemonSet that no longer targets the node, and a deleted service account, sampled all
// along (test/cluster/sampled.ts): a pod is meshed only if the plugin's API call, made with the
// kubeconfig's token, answered 200 on every ADD.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenClaims } from '../../../src/kube/token-claims.js';
import { repoRoot } from '../../helpers/addon-path.js';
import { waitFor } from '../../helpers/wait.js';
import { sampledWhile } from '../sampled.js';
import { agentPods, cp, deploy, followAgentLog, NS, ns, PRIMARY, PRIMARY_NAME, primaryBins, reason, testLayout, undeploy } from '../single-node.js';

const BASE = path.join(repoRoot, 'deploy', 'base');
const KUBECONFIG = 'ZZZ-linkerd-cni-kubeconfig';

const kubeconfigToken = () => JSON.parse(/^\s*token: (".*")$/m.exec(readFileSync(path.join(ns.netDir, KUBECONFIG), 'utf8'))![1]!) as string;

/** Waits until the kubeconfig carries a token bound to the Node (the agent asked for it after its start). */
async function nodeTokenInKubeconfig(): Promise<void> {
  await waitFor(() => {
    try {
      const claims = tokenClaims(kubeconfigToken());
      return claims !== undefined && claims.pod === undefined && claims.node !== undefined;
    } catch {
      return false;
    }
  }, 'the kubeconfig carrying a node token', 60_000);
}

function nodeIsBare(): void {
  expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
  expect(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8')).toBe(PRIMARY);
  expect(readdirSync(ns.binDir).sort()).toEqual(primaryBins);
}

describe.skipIf(reason !== undefined)('the node outlives the agent pod', () => {
  it('a forced delete (kubectl delete --force --grace-period=0): never unchained, every pod meshed with the node token', async () => {
    const agent = await deploy(BASE);
    await nodeTokenInKubeconfig();
    const { samples, missing } = await sampledWhile('forced delete', async () => {
      cp.kubectl(['delete', 'pod', '-n', NS, agent.name, '--force', '--grace-period=0']);
      await waitFor(() => agentPods().some((p) => p.name !== agent.name && p.ready), 'the replacement Ready', 120_000);
    });
    expect(samples.unchained).toEqual([]);
    expect(samples.missingBinary).toEqual([]);
    expect(missing).toEqual([]);
  }, 300_000);

  it('the DaemonSet no longer targets the node (its nodeSelector changed): uninstalled, the node byte-identical', async () => {
    await nodeTokenInKubeconfig();
    const agent = agentPods()[0]!;
    cp.kubectl(['patch', 'daemonset', '-n', NS, 'linkerd-cni', '--type', 'merge', '-p', JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/os': 'linux', 'cni-chainer.io/test': 'elsewhere' } } } } })]);
    await waitFor(() => !agentPods().some((p) => p.name === agent.name), 'the agent pod deleted by the DaemonSet controller', 120_000);
    expect(agentPods()).toEqual([]);
    nodeIsBare();
    expect(existsSync(path.join(ns.netDir, KUBECONFIG))).toBe(false);
    await undeploy(BASE);
  }, 300_000);

  it('the service account deleted: the SIGTERM that follows uninstalls', async () => {
    const agent = await deploy(BASE);
    await nodeTokenInKubeconfig();
    const token = kubeconfigToken();
    cp.kubectl(['delete', 'serviceaccount', '-n', NS, 'linkerd-cni']);
    const deleted = performance.now();
    // The API server refuses the account's tokens once its cache has seen the deletion, and once a
    // success it cached (kube-apiserver keeps one 10 s) has run out: the pod's token too.
    await waitFor(() => {
      try {
        cp.kubectl(['get', '--raw', '/api'], { token });
        return false;
      } catch (err) {
        return /Unauthorized/.test((err as Error).message);
      }
    }, 'the node token refused', 30_000);
    await new Promise((r) => setTimeout(r, Math.max(0, deleted + 11_000 - performance.now())));
    const logs = followAgentLog(agent.name);
    cp.kubectl(['delete', 'pod', '-n', NS, agent.name]);
    await waitFor(() => !agentPods().some((p) => p.name === agent.name), 'the agent pod gone', 120_000);
    const log = logs.stop().filter((l) => Number(l.level) >= 30).map((l) => `${String(l.msg)} ${JSON.stringify(l.reason ?? l.answers ?? '')}`);
    expect(log.find((l) => l.startsWith('uninstalling')) ?? log.join('\n')).toMatch(/service account is gone/);
    nodeIsBare();
    await undeploy(BASE);
  }, 300_000);

  it('a graceful delete, no surge (maxUnavailable 1), the replacement 20 s in starting: the plugin keeps its credential through the gap', async () => {
    const layout = testLayout('slow-start', [
      { op: 'replace', path: '/spec/updateStrategy', value: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } } },
      { op: 'add', path: '/spec/template/spec/initContainers', value: [{ name: 'slow-start', image: 'cni-chainer:0.1.0-cni-plugin-v1.7.0', command: ['sleep', '20'] }] },
    ]);
    const agent = await deploy(layout);
    await nodeTokenInKubeconfig();
    const { samples, missing } = await sampledWhile('graceful delete, maxUnavailable 1, a 20 s start', async () => {
      cp.kubectl(['delete', 'pod', '-n', NS, agent.name, '--wait=false']);
      await waitFor(() => agentPods().some((p) => p.name !== agent.name && p.ready), 'the replacement Ready', 180_000);
    });
    expect(samples.unchained).toEqual([]);
    expect(samples.missingBinary).toEqual([]);
    expect(missing).toEqual([]);
    await undeploy(layout);
    nodeIsBare();
  }, 400_000);
});
