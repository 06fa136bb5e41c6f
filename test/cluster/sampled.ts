// Something done to the node while its files are watched and pods keep coming: the loaded config and
// the plugin's binary sampled every 20 ms by a process of their own (test/helpers/node-sampler.ts), a
// pod created every 300 ms, each counted meshed only if every ADD of the chained plugin ran and its API
// call answered 200. The figures are logged for the closing notes and docs.
import path from 'node:path';
import { sampleNode, type NodeSamples } from '../helpers/node-sampler.js';
import { cp, createPod, notMeshed, ns, PRIMARY_NAME, pluginAnswers, waitRunning } from './single-node.js';

export interface Sampled {
  samples: NodeSamples;
  pods: string[];
  /** The pods not meshed. */
  missing: string[];
}

export async function sampledWhile(what: string, during: () => Promise<unknown>): Promise<Sampled> {
  const sampler = await sampleNode(path.join(ns.netDir, PRIMARY_NAME), path.join(ns.binDir, 'linkerd-cni'), 'linkerd-cni');
  const pods: string[] = [];
  let done = false;
  const work = during().finally(() => (done = true));
  let samples: NodeSamples | undefined;
  try {
    while (!done) {
      pods.push(createPod(true));
      await new Promise((r) => setTimeout(r, 300));
    }
    await work;
  } finally {
    samples = await sampler.stop();
  }
  await waitRunning(pods).catch(() => {});
  const missing = notMeshed(pods);
  const window = samples.unchained.length === 0 ? '' : ` over ${samples.unchained.at(-1)! - samples.unchained[0]! + 20} ms`;
  console.log(`${what}: ${samples.count} samples, ${samples.unchained.length} unchained${window}, ${samples.missingBinary.length} naming a missing binary (runs ${JSON.stringify(samples.runs)}, longest gap ${samples.maxGapMs} ms); ${pods.length - missing.length} of ${pods.length} pods meshed; plugin API answers ${JSON.stringify(pluginAnswers(pods))}`);
  cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
  return { samples, pods, missing };
}
