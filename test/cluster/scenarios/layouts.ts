// The layouts on the real node: a primary that rewrites its file while pods start, memory as the
// kubelet sees it, and host paths the pod must mount.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { repoRoot } from '../../helpers/addon-path.js';
import { waitFor } from '../../helpers/wait.js';
import { agentPods, cp, createPod, deploy, describeMemory, memoryOf, notMeshed, ns, PRIMARY, PRIMARY_NAME, probeAgent, reason, testLayout, undeploy, waitRunning } from '../single-node.js';

describe.skipIf(reason !== undefined)('layouts on the real node: a primary that rewrites its file, memory, host paths', () => {
  const base = path.join(repoRoot, 'deploy', 'base');

  it.each([
    ['base', 500],
    ['overlays/owned', 100],
  ])('%s: a primary rewriting its conflist every %i ms while pods start: pods meshed, memory as the kubelet sees it', async (layout, everyMs) => {
    const dirOf = path.join(repoRoot, 'deploy', layout);
    const file = path.join(ns.netDir, PRIMARY_NAME);
    const agent = await deploy(dirOf);
    const idle = memoryOf(agent.uid);
    let peak = idle;
    const sampler = setInterval(() => {
      const m = memoryOf(agent.uid);
      if (m.workingSet > peak.workingSet) peak = m;
    }, 200);
    // The primary's installer: temp file and rename, unchained, as Calico and Flannel rewrite theirs.
    const churn = setInterval(() => {
      writeFileSync(`${file}.primary-tmp`, PRIMARY);
      renameSync(`${file}.primary-tmp`, file);
    }, everyMs);
    const pods: string[] = [];
    try {
      for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) pods.push(createPod(true));
      // The churn goes on until every sandbox has been set up.
      await waitRunning(pods);
    } finally {
      clearInterval(churn);
      clearInterval(sampler);
    }
    const meshed = pods.length - notMeshed(pods).length;
    console.log(`${layout}, churn every ${everyMs} ms: ${meshed}/${pods.length} pods meshed; memory idle ${describeMemory(idle)}, peak under churn ${describeMemory(peak)}`);
    // In place a pod may start in the window between the primary's rename and ours (README, "Two
    // modes"): containerd 2 reloads net.d at each event, and a reload that reads the file inside that
    // window serves the unchained config until our rename's event (seen: 1 of 24, 0 of 26 and 2 of
    // 19 at 500 ms). Owned mode has no such window. How long the window is, is a timing (the bench's
    // business); what this asserts is that the agent answers every rewrite: one that did not would
    // leave every later pod out. At the ~4% seen, more than a quarter of ~20 pods out happens in
    // fewer than 1 run in 10,000; a floor of 0.9 failed 1 run in 6 (2 of 19).
    if (layout === 'base') expect(meshed / pods.length).toBeGreaterThanOrEqual(0.75);
    else expect(meshed).toBe(pods.length);
    expect(peak.usage).toBeLessThan(peak.limit);
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
    await undeploy(dirOf);
    expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
    expect(readFileSync(file, 'utf8')).toBe(PRIMARY);
  }, 300_000);

  it('memory through a 1,000-config storm stays within the limit', async () => {
    // The storm in a directory of its own, mounted where the pod expects net.d: the runtime's own
    // watch of net.d is not the question here.
    const stormDir = path.join(ns.netDir, '..', 'storm.d');
    mkdirSync(stormDir, { recursive: true });
    writeFileSync(path.join(stormDir, PRIMARY_NAME), PRIMARY);
    const layout = testLayout('storm', [{ op: 'replace', path: '/spec/template/spec/volumes/0/hostPath/path', value: '/etc/cni/storm.d' }]);
    const agent = await deploy(layout);
    await new Promise((r) => setTimeout(r, 2_000));
    const idle = memoryOf(agent.uid);
    let peak = idle;
    const sample = () => {
      const m = memoryOf(agent.uid);
      if (m.workingSet > peak.workingSet) peak = m;
    };
    const names = Array.from({ length: 1000 }, (_, i) => `50-storm-${String(i).padStart(4, '0')}.conflist`);
    names.forEach((name, i) => {
      writeFileSync(path.join(stormDir, `.${name}.w`), fixture('10-flannel.conflist'));
      renameSync(path.join(stormDir, `.${name}.w`), path.join(stormDir, name));
      if (i % 25 === 0) sample();
    });
    const allChained = () => names.every((n) => readFileSync(path.join(stormDir, n), 'utf8').includes('linkerd-cni'));
    for (const deadline = Date.now() + 60_000; !allChained() && Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) sample();
    sample();
    expect(allChained()).toBe(true);
    console.log(`memory, base pod: idle ${describeMemory(idle)}; 1,000-config storm, peak ${describeMemory(peak)}`);
    expect(peak.usage).toBeLessThan(peak.limit);
    await undeploy(layout);
    expect(readdirSync(stormDir).filter((n) => readFileSync(path.join(stormDir, n), 'utf8').includes('linkerd-cni'))).toEqual([]);
    rmSync(stormDir, { recursive: true });
  }, 300_000);

  it('mounts tell the truth: a symlink target on an unmounted host path is named with its fix; the host-paths overlay mounts it', async () => {
    // The target in the node's own /var/lib (a tmpfs of its namespace), relative so that containerd follows it too.
    const targets = ns.inside('/var/lib/cni-configs');
    mkdirSync(targets, { recursive: true });
    writeFileSync(path.join(targets, 'primary.conflist'), PRIMARY);
    symlinkSync('../../../var/lib/cni-configs/primary.conflist', path.join(ns.netDir, '10-linked.conflist'));
    try {
      cp.kubectl(['apply', '-k', base]);
      let readiness = { status: 0, body: '' };
      await waitFor(() => {
        readiness = probeAgent('/readyz');
        return readiness.status === 503 && readiness.body.includes('does not mount');
      }, 'readiness naming the unmounted host path', 60_000);
      expect(readiness.body).toContain('the target /var/lib/cni-configs/primary.conflist is on a host path this pod does not mount');
      expect(readiness.body).toContain('add a hostPath volume for /var/lib/cni-configs (deploy/overlays/host-paths)');
      expect(agentPods()[0]!.ready).toBe(false);
      await undeploy(base);
      const hostPaths = path.join(repoRoot, 'deploy', 'overlays', 'host-paths');
      await deploy(hostPaths);
      expect(readFileSync(path.join(targets, 'primary.conflist'), 'utf8')).toContain('linkerd-cni');
      const pods = Array.from({ length: 3 }, () => createPod(true));
      await waitRunning(pods);
      expect(notMeshed(pods)).toEqual([]);
      cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
      await undeploy(hostPaths);
      expect(readFileSync(path.join(targets, 'primary.conflist'), 'utf8')).toBe(PRIMARY);
    } finally {
      rmSync(path.join(ns.netDir, '10-linked.conflist'), { force: true });
    }
  }, 300_000);
});
