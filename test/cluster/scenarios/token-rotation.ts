// The kubelet rotates the agent's projected token: where no node token can be had (a cluster whose
// operator left the node-token Role out), the kubeconfig carries the pod's token and follows its
// rotation, and the plugin keeps working.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { cp, createPod, deploy, node, notMeshed, ns, PRIMARY_NAME, reason, testLayout, undeploy, waitRunning } from '../single-node.js';

describe.skipIf(reason !== undefined)('token rotation on the real node', () => {
  it('without the node-token Role, the kubelet rotates the projected token (expirationSeconds 600, the least the API allows): the kubeconfig follows, and the plugin keeps working', async () => {
    // The token the kubelet mounts, with the shortest lifetime the API server admits. The kubelet
    // renews a projected token once 80% of its lifetime has passed (pkg/kubelet/token: 480 s here).
    const layout = testLayout('short-token', [
      { op: 'add', path: '/spec/template/spec/automountServiceAccountToken', value: false },
      {
        op: 'add',
        path: '/spec/template/spec/volumes/-',
        value: {
          name: 'short-token',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 600 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      },
      { op: 'add', path: '/spec/template/spec/containers/0/volumeMounts/-', value: { name: 'short-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true } },
    ], [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', name: 'linkerd-cni-node-token' }]);
    const agent = await deploy(layout);
    // A tmpfs the kubelet mounted in the node's mount namespace: read through it.
    const tokenFile = ns.inside(path.join(node.dir, 'kubelet', 'root', 'pods', agent.uid, 'volumes', 'kubernetes.io~projected', 'short-token', 'token'));
    const kubeconfigToken = () => JSON.parse(/^\s*token: (".*")$/m.exec(readFileSync(path.join(ns.netDir, 'ZZZ-linkerd-cni-kubeconfig'), 'utf8'))![1]!) as string;
    const first = readFileSync(tokenFile, 'utf8');
    expect(kubeconfigToken()).toBe(first);
    const began = Date.now();
    await waitFor(() => readFileSync(tokenFile, 'utf8') !== first, 'the kubelet rotating the token', 600_000);
    const rotatedAfter = Date.now() - began;
    await waitFor(() => kubeconfigToken() === readFileSync(tokenFile, 'utf8'), 'the kubeconfig rewritten with the new token', 30_000);
    console.log(`token rotated by the kubelet ${(rotatedAfter / 1000).toFixed(0)} s after the pod was Ready; the kubeconfig followed`);
    const pods = Array.from({ length: 2 }, () => createPod(true));
    await waitRunning(pods);
    expect(notMeshed(pods)).toEqual([]);
    cp.kubectl(['delete', 'pods', '-n', 'default', '-l', 'app=meshed', '--wait=false']);
    await undeploy(layout);
    expect(readdirSync(ns.netDir)).toEqual([PRIMARY_NAME]);
  }, 900_000);
});
