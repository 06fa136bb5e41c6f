// Events on the Node are aggregated: a fight that repeats a thousand times is one Event whose series
// counts the repeats, written at most once per interval, and a node makes a bounded number of new
// Events per window. The real client over HTTP against a server giving the API server's answers.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/kube/api-client.js';
import { NodeEvents } from '../../src/kube/node-events.js';
import { RecordedApi } from '../helpers/api-answers.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

const EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';

async function setup(seriesUpdateMs: number) {
  const api = await new RecordedApi({ [`POST ${EVENTS}`]: { status: 201, fixture: 'event.json' }, [`PATCH ${EVENTS}/*`]: { status: 200, fixture: 'event.json' } }).start();
  const dir = tempDir();
  writeFileSync(path.join(dir, 'token'), 'token-1');
  const client = new ApiClient({ server: `http://127.0.0.1:${api.port}`, token: () => 'token-1', caFile: undefined, timeoutMs: 2_000 });
  const events = new NodeEvents(client, 'node-1', 'linkerd-cni-x7k2p', pino({ level: 'silent' }), Date.now, seriesUpdateMs);
  return { api, events };
}

describe('Events on the Node', () => {
  it('a thousand repeats of one fight: one Event, then its series counted once per interval', async () => {
    const { api, events } = await setup(200);
    for (let i = 0; i < 1000; i++) events.record('Fight', '10-calico.conflist: backoff (reverted within 100 ms of each write)', 'Warning');
    await events.flush();
    expect(api.requests.map((r) => r.method)).toEqual(['POST']);
    const created = JSON.parse(api.requests[0]!.body) as Record<string, unknown>;
    expect(created).toMatchObject({ reason: 'Fight', type: 'Warning', reportingController: 'cni-chainer', reportingInstance: 'linkerd-cni-x7k2p', regarding: { kind: 'Node', name: 'node-1' } });
    expect(String(created.eventTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    await waitFor(() => api.requests.length === 2, 'the series written');
    await events.flush();
    expect(api.requests[1]!.method).toBe('PATCH');
    expect(api.requests[1]!.url).toBe(`${EVENTS}/node-1.5f0c3b2a9d8e7f61`);
    expect(JSON.parse(api.requests[1]!.body)).toMatchObject({ series: { count: 1000 } });
    // Nothing more happens: no write while nothing repeats.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(api.requests).toHaveLength(2);
    events.dispose();
  });

  it('at most 10 new Events per node per 10 minutes, however many reasons come', async () => {
    const { api, events } = await setup(60_000);
    for (let i = 0; i < 50; i++) events.record('Unchained', `config ${i}: invalid`, 'Warning');
    await events.flush();
    expect(api.requests.filter((r) => r.method === 'POST')).toHaveLength(10);
    events.dispose();
  });
});
