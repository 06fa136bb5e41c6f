// deploy/base as operators apply it, and every graceful way its pod ends (a rolling update, a
// rollback, a liveness restart, a drain, an eviction), sampled every 20 ms; then its removal.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/addon-path.js';
import { sampleNode } from '../../helpers/node-sampler.js';
import { waitFor } from '../../helpers/wait.js';
import { agentPid, agentPods, chained, cp, createPod, json, kubectlAsync, node, NODE, notMeshed, NS, ns, PRIMARY, PRIMARY_NAME, primaryBins, reason, TAINT, taints, undeploy, waitRunning } from '../single-node.js';

describe.skipIf(reason !== undefined)('deploy/base on a real node (kubelet, containerd 2)', () => {
  it('gates the node: a pod created before the agent waits for the taint, and starts meshed once the agent chained', async () => {
    expect(taints()).toContain(TAINT);
    const early = createPod();
    // The scheduler's words: "0/1 nodes are available: 1 node(s) had untolerated taint(s)".
    await waitFor(
      () => json<{ status: { conditions?: Array<{ type: string; reason?: string; message?: string }> } }>(['get', 'pod', '-n', 'default', early]).status.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable' && c.message?.includes('untolerated taint') === true) === true,
      'the early pod unschedulable for the taint',
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${cp.kubectl(['get', 'pod', '-n', 'default', early, '-o', 'yaml'])}`);
    });
    cp.kubectl(['apply', '-k', path.join(repoRoot, 'deploy', 'base')]);
    // The scheduler places the DaemonSet's pod (it tolerates the taint), admission takes it, and the
    // kubelet runs it with the manifest's probes: Ready means the readiness probe answered 200.
    await waitFor(() => agentPods().some((p) => p.ready), 'the agent pod Ready', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${cp.kubectl(['describe', 'pods', '-n', NS])}\n${node.logTail('kubelet', 20)}`);
    });
    expect(chained()).toBe(true);
    await waitFor(() => !taints().includes(TAINT), 'the taint removed', 30_000);
    await waitRunning([early]);
    expect(notMeshed([early])).toEqual([]);
    expect(cp.kubectl(['events', '--for', `node/${NODE}`])).toMatch(/Chained/);
  }, 300_000);

  it('meshes the pods created through the API, and the kubeconfig it wrote reaches the API server', async () => {
    const pods = Array.from({ length: 5 }, () => createPod());
    await waitRunning(pods);
    expect(notMeshed(pods)).toEqual([]);
    const kubeconfig = readFileSync(path.join(ns.netDir, 'ZZZ-linkerd-cni-kubeconfig'), 'utf8');
    expect(kubeconfig).toContain('"https://10.96.0.1:443"');
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
  }, 180_000);

  it('a rolling update, a rollback, a liveness restart, a drain and an eviction: never unchained (sampled every 20 ms), every pod meshed', async () => {
    const sampler = await sampleNode(path.join(ns.netDir, PRIMARY_NAME), path.join(ns.binDir, 'linkerd-cni'), 'linkerd-cni');
    const created: string[] = [];
    /** Pods created one after another while `during` runs. */
    const withPods = async (during: Promise<unknown>) => {
      let done = false;
      void during.finally(() => (done = true)).catch(() => {});
      while (!done) {
        created.push(createPod(true));
        await new Promise((r) => setTimeout(r, 300));
      }
      await during;
    };
    const rollout = () => kubectlAsync(['rollout', 'status', '-n', NS, 'daemonset/linkerd-cni', '--timeout=180s']);
    try {
      // A rolling update by the DaemonSet controller (maxSurge 1): the new pod beside the old one.
      const before = agentPods()[0]!.name;
      cp.kubectl(['set', 'env', '-n', NS, 'daemonset/linkerd-cni', 'LOG_LEVEL=debug']);
      await withPods(rollout());
      await waitFor(() => agentPods().length === 1 && agentPods()[0]!.name !== before && agentPods()[0]!.ready, 'one new agent pod', 60_000);
      // kubectl rollout undo.
      const updated = agentPods()[0]!.name;
      cp.kubectl(['rollout', 'undo', '-n', NS, 'daemonset/linkerd-cni']);
      await withPods(rollout());
      await waitFor(() => agentPods().length === 1 && agentPods()[0]!.name !== updated && agentPods()[0]!.ready, 'the previous version back', 60_000);
      // A liveness restart: the agent frozen until the kubelet gives up on its /healthz, then thawed
      // so that it meets the kubelet's SIGTERM.
      const pod = agentPods()[0]!;
      const pid = agentPid(pod.uid);
      process.kill(pid, 'SIGSTOP');
      try {
        await withPods(waitFor(() => cp.kubectl(['events', '-n', NS, '--for', `pod/${pod.name}`]).includes('failed liveness probe, will be restarted'), 'the liveness restart', 90_000));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await withPods(waitFor(() => agentPods()[0]?.restarts === 1 && agentPods()[0]!.ready, 'the container restarted and Ready', 90_000));
      // A drain: the node cordoned and its pods evicted (the DaemonSet's stays, as kubectl drain
      // leaves it), then the agent's own pod evicted through the eviction API. No pod is created
      // during the drain itself, and every pod created so far has its sandbox first: a pod the drain
      // deletes before the kubelet sets it up would never have an ADD to count.
      await waitRunning(created);
      await kubectlAsync(['drain', NODE, '--ignore-daemonsets', '--force', '--timeout=120s']);
      cp.kubectl(['uncordon', NODE]);
      const evicted = agentPods()[0]!;
      cp.kubectl(['create', '--raw', `/api/v1/namespaces/${NS}/pods/${evicted.name}/eviction`, '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: evicted.name, namespace: NS } }),
      });
      await withPods(waitFor(() => agentPods().some((p) => p.name !== evicted.name && p.ready) && !agentPods().some((p) => p.name === evicted.name), 'a new agent pod after the eviction', 120_000));
    } finally {
      const samples = await sampler.stop();
      console.log(`rollout, rollback, liveness restart, drain, eviction: ${samples.count} samples, ${samples.unchained.length} unchained, longest gap ${samples.maxGapMs} ms; ${created.length} pods created meanwhile`);
      expect(samples.unchained).toEqual([]);
      expect(samples.missingBinary).toEqual([]);
      expect(samples.maxGapMs).toBeLessThan(1_000);
    }
    // The pods the drain evicted ran before it; every pod created meanwhile got its ADD.
    const current = json<{ items: Array<{ metadata: { name: string } }> }>(['get', 'pods', '-n', 'default']).items.map((p) => p.metadata.name);
    await waitRunning(created.filter((p) => current.includes(p)));
    await waitFor(() => notMeshed(created).length === 0, 'every pod created meanwhile meshed', 60_000).catch(() => {
      const missing = notMeshed(created);
      throw new Error(`not meshed: ${missing.join(', ')}\n${cp.kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${missing[0]}`])}`);
    });
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
  }, 900_000);

  it('kubectl delete -k deploy/base: the node is left byte-identical', async () => {
    await undeploy(path.join(repoRoot, 'deploy', 'base'));
    expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
    expect(readFileSync(path.join(ns.netDir, PRIMARY_NAME), 'utf8')).toBe(PRIMARY);
    expect(readdirSync(ns.binDir).sort()).toEqual(primaryBins);
    expect(existsSync(path.join(ns.netDir, 'ZZZ-linkerd-cni-kubeconfig'))).toBe(false);
  }, 180_000);
});
