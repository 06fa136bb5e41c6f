// KubeNode (src/daemon/lifecycle/kube-node.ts): what readiness changes tell the API server about the
// node, through the real client over HTTP against a server giving the API server's answers. The
// Events come from typed reasons (node-event-table.ts); the taint comes off once ready; not ready
// while starting says nothing; the uninstall is said and waited for within its bound.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { KubeNode } from '../../src/daemon/lifecycle/kube-node.js';
import type { NotReady } from '../../src/daemon/shared/readiness.js';
import { Credentials } from '../../src/kube/credentials.js';
import { RecordedApi } from '../helpers/api-answers.js';
import { pluginText } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const NODE = '/api/v1/nodes/node-1';
const EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';

/** A projected service-account volume: the token (unless false) and the cluster's CA. */
function serviceAccountDir(token: string | false): string {
  const dir = tempDir('cni-chainer-sa-');
  if (token !== false) writeFileSync(path.join(dir, 'token'), token);
  writeFileSync(path.join(dir, 'ca.crt'), 'CA');
  return dir;
}

async function kubeNode(env: NodeJS.ProcessEnv = {}, token: string | false = 'token-1') {
  const api = await new RecordedApi({
    [`GET ${NODE}`]: { status: 200, fixture: 'node-tainted.json' },
    [`PATCH ${NODE}`]: { status: 200, fixture: 'node.json' },
    [`POST ${EVENTS}`]: { status: 201, fixture: 'event.json' },
  }).start();
  const serviceAccount = serviceAccountDir(token);
  const config = loadConfig({ CNI_NETWORK_CONFIG: pluginText, SERVICEACCOUNT_PATH: serviceAccount, NODE_NAME: 'node-1', ...api.env(), ...env });
  const node = await KubeNode.create(config, new Credentials(config.serviceAccountDir, config.nodeName), pino({ level: 'silent' }));
  const events = () => api.requests.filter((r) => `${r.method} ${r.url}` === `POST ${EVENTS}`).map((r) => JSON.parse(r.body) as { reason: string; type: string; note: string });
  return { api, node, events };
}

const unchained: NotReady = { kind: 'condition', key: 'net-dir', reason: '/etc/cni/net.d does not resolve inside the host root (ENOENT at /etc)' };
const fight: NotReady = { kind: 'config', name: '10-calico.conflist', status: 'backoff', detail: 'patch reverted within milliseconds of each write; next try in 1000 ms' };
const standby: NotReady = { kind: 'condition', key: 'standby', reason: 'a newer instance owns this node' };

describe('KubeNode: readiness told to the API server', () => {
  it('is nothing outside Kubernetes: no NODE_NAME, or no token', async () => {
    expect((await kubeNode({ NODE_NAME: '' })).node).toBeUndefined();
    expect((await kubeNode({}, false)).node).toBeUndefined();
  });

  it('says nothing of not being ready while starting, but a fight at once', async () => {
    const { api, node, events } = await kubeNode();
    node!.readinessChanged(false, [unchained, standby]);
    node!.readinessChanged(false, [fight]);
    await waitFor(() => events().length === 1, 'the Fight Event');
    expect(events()[0]).toMatchObject({ reason: 'Fight', type: 'Warning' });
    expect(api.requests.filter((r) => r.method === 'PATCH')).toEqual([]);
    node!.dispose();
  });

  it('ready: the startup taint comes off and Chained is said; unchained after that is a Warning', async () => {
    const { api, node, events } = await kubeNode();
    node!.readinessChanged(true, []);
    await waitFor(() => api.requests.some((r) => `${r.method} ${r.url}` === `PATCH ${NODE}`), 'the taint removed');
    await waitFor(() => events().length === 1, 'the Chained Event');
    expect(events()[0]).toMatchObject({ reason: 'Chained', type: 'Normal' });
    node!.readinessChanged(false, [unchained, standby]);
    await waitFor(() => events().length === 2, 'the Unchained Event');
    expect(events()[1]).toMatchObject({ reason: 'Unchained', type: 'Warning', note: unchained.reason });
    node!.dispose();
  });

  it('the uninstall is said and waited for, within its bound when the API server does not answer', async () => {
    const { events, node } = await kubeNode();
    await node!.uninstalling('the DaemonSet is gone', 2_000);
    expect(events()).toMatchObject([{ reason: 'Uninstall', type: 'Normal', note: 'removing the plugin from every config: the DaemonSet is gone' }]);
    node!.dispose();

    const silent = await new RecordedApi({ [`POST ${EVENTS}`]: 'no answer' }).start();
    const config = loadConfig({ CNI_NETWORK_CONFIG: pluginText, SERVICEACCOUNT_PATH: serviceAccountDir('token-1'), NODE_NAME: 'node-1', ...silent.env() });
    const hung = (await KubeNode.create(config, new Credentials(config.serviceAccountDir, config.nodeName), pino({ level: 'silent' })))!;
    const started = performance.now();
    await hung.uninstalling('the DaemonSet is gone', 300);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(silent.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`POST ${EVENTS}`]);
    hung.dispose();
  });
});
