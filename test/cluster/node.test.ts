// deploy/base on a real single-node cluster: etcd, kube-apiserver, the controller manager, the
// scheduler, containerd 2 and a kubelet, all built from their Go modules (scripts/build-cluster.sh),
// in the node's own namespaces (node-namespace.ts). The image is built from the repo's Dockerfile on
// stand-in bases and loaded into the node's containerd; the manifests are applied with kubectl as
// operators apply them. The primary CNI is containernetworking-plugins' bridge, its conflist written
// into net.d as kind's installer writes it.
//
// The stand-in linkerd-cni in the image records every call, and on each ADD it GETs its pod from
// the API server with the kubeconfig the agent wrote, failing the ADD (and the pod's sandbox) unless
// that GET answers 200, as linkerd-cni does: a pod is meshed when its ADDs are recorded and all
// answered 200.
//
// One cluster serves every scenario (scenarios/), in the order imported here: it takes minutes to
// build and start.
import { afterAll, beforeAll } from 'vitest';
import { reason, setUpNode, tearDownNode } from './single-node.js';
import './scenarios/image.js';
import './scenarios/rollouts.js';
import './scenarios/outlives-pod.js';
import './scenarios/helm-switch.js';
import './scenarios/layouts.js';
import './scenarios/token-rotation.js';

if (reason !== undefined) {
  console.warn(`cluster node suite skipped: ${reason}`);
  if (process.env.CI === 'true') throw new Error(`the cluster node suite cannot run in CI: ${reason}`);
}

beforeAll(async () => {
  if (reason === undefined) await setUpNode();
}, 1_800_000);

afterAll(tearDownNode, 60_000);
