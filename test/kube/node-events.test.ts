// Events on the Node are aggregated: a fight that repeats a thousand times is one Event whose series
// counts the repeats, written at most once per interval; a node makes a bounded number of new Events
// per window, counted on a monotonic clock; what it remembers is pruned; notes fit the API's 1 KiB in
// bytes; a create the API server fails is tried again. The real client over HTTP against a server
// giving the API server's answers.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/kube/api-client.js';
import { NodeEvents, truncateUtf8 } from '../../src/kube/node-events.js';
import { nodeEventOf } from '../../src/daemon/lifecycle/node-event-table.js';
import { RecordedApi, type Answer, type Answers } from '../helpers/api-answers.js';
import { waitFor } from '../helpers/wait.js';

const EVENTS = '/apis/events.k8s.io/v1/namespaces/default/events';
const CREATED: Answers = { status: 201, fixture: 'event.json' };

async function setup(seriesUpdateMs: number, clock: { mono: number; wall: number } = { mono: 0, wall: Date.now() }, post: Answers = CREATED) {
  const api = await new RecordedApi({ [`POST ${EVENTS}`]: post, [`PATCH ${EVENTS}/*`]: { status: 200, fixture: 'event.json' } }).start();
  const client = new ApiClient({ server: `http://127.0.0.1:${api.port}`, token: () => 'token-1', caFile: undefined, timeoutMs: 2_000 });
  const events = new NodeEvents(client, 'node-1', 'linkerd-cni-x7k2p', pino({ level: 'silent' }), () => clock.mono, seriesUpdateMs, () => clock.wall);
  return { api, events, clock };
}
const posts = (api: RecordedApi) => api.requests.filter((r) => r.method === 'POST');

describe('Events on the Node', () => {
  it('a thousand repeats of one fight: one Event, then its series counted once per interval', async () => {
    const { api, events } = await setup(200);
    for (let i = 0; i < 1000; i++) events.record('Fight', 'config:10-calico.conflist:backoff', '10-calico.conflist: backoff (reverted within 100 ms of each write)', 'Warning');
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

  it('at most 10 new Events per node per 10 minutes of the monotonic clock; a wall clock stepped back a day changes nothing', async () => {
    const { api, events, clock } = await setup(60_000);
    for (let i = 0; i < 50; i++) events.record('Unchained', `config:${i}:invalid`, `config ${i}: invalid`, 'Warning');
    await events.flush();
    expect(posts(api)).toHaveLength(10);
    // The wall clock steps back a day (NTP, a VM restored); ten minutes pass on the monotonic one.
    clock.wall -= 86_400_000;
    clock.mono += 10 * 60_000;
    for (let i = 50; i < 100; i++) events.record('Unchained', `config:${i}:invalid`, `config ${i}: invalid`, 'Warning');
    await events.flush();
    expect(posts(api)).toHaveLength(20);
    events.dispose();
  });

  it('a fight that comes and goes every 2 minutes for 7 days: one key, one Event a window at most, a handful remembered', async () => {
    const { api, events, clock } = await setup(60_000);
    for (let flip = 0; flip < 5_040; flip++) {
      clock.mono += 120_000;
      // The keeper's detail names its next try: the table keeps it out of the key and the note.
      const event = nodeEventOf({ kind: 'config', name: '05-cilium.conflist', status: 'backoff', detail: `reverted; next try in ${1000 * 2 ** (flip % 7)} ms` }, 'in-place')!;
      events.record(event.reason, event.key, event.note, event.type);
      // Other causes come and go too: they are forgotten a window after their last occurrence.
      if (flip % 10 === 0) events.record('Unchained', `config:${flip}-other.conflist:invalid`, 'invalid', 'Warning');
    }
    await events.flush();
    expect(events.remembered).toBeLessThanOrEqual(11);
    // One Fight Event for the whole week (its series counts the rest).
    expect(posts(api).filter((r) => (JSON.parse(r.body) as { reason: string }).reason === 'Fight')).toHaveLength(1);
    // The other causes: one every 20 minutes, each its own Event.
    expect(posts(api).length).toBe(1 + 504);
    events.dispose();
  });

  it('cuts a long note to 1,024 bytes of UTF-8, never inside a character', async () => {
    expect(truncateUtf8('a'.repeat(1024))).toBe('a'.repeat(1024));
    const long = `${'a'.repeat(1023)}é…`;
    expect(Buffer.byteLength(truncateUtf8(long))).toBeLessThanOrEqual(1024);
    for (const note of ['é'.repeat(600), '😀'.repeat(400), `${'x'.repeat(1021)}😀😀`]) {
      const cut = truncateUtf8(note);
      expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1024);
      expect(cut.endsWith('…')).toBe(true);
      expect(note.startsWith(cut.slice(0, -1))).toBe(true);
      expect(cut).not.toContain('\ufffd');
    }
    const { api, events } = await setup(60_000);
    events.record('Unchained', 'config:x:error', '€'.repeat(2000), 'Warning');
    await events.flush();
    expect(Buffer.byteLength((JSON.parse(posts(api)[0]!.body) as { note: string }).note)).toBeLessThanOrEqual(1024);
    events.dispose();
  });

  it('a create that timed out (504) but was stored: its retry is refused as AlreadyExists, and the Event is taken as there', async () => {
    const timedOut: Answer = { status: 504, body: { kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504 } };
    const exists: Answer = { status: 409, body: { kind: 'Status', status: 'Failure', reason: 'AlreadyExists', code: 409 } };
    const { api, events } = await setup(200, undefined, [timedOut, exists]);
    events.record('Fight', 'config:10-calico.conflist:backoff', 'reverted', 'Warning');
    events.record('Fight', 'config:10-calico.conflist:backoff', 'reverted', 'Warning');
    await events.flush();
    const [first, retry] = posts(api).map((r) => JSON.parse(r.body) as { metadata: { name: string } });
    expect(retry!.metadata.name).toBe(first!.metadata.name);
    // Its series goes to the Event under that name: the create counted as done.
    await waitFor(() => api.requests.some((r) => r.method === 'PATCH'), 'the series written');
    expect(api.requests.find((r) => r.method === 'PATCH')!.url).toBe(`${EVENTS}/${first!.metadata.name}`);
    events.dispose();
    // A first create refused as AlreadyExists is no retry of ours: not taken as done.
    const refused = await setup(200, undefined, exists);
    refused.events.record('Fight', 'config:10-calico.conflist:backoff', 'reverted', 'Warning');
    refused.events.record('Fight', 'config:10-calico.conflist:backoff', 'reverted', 'Warning');
    await refused.events.flush();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(refused.api.requests.map((r) => r.method)).toEqual(['POST']);
    refused.events.dispose();
  }, 20_000);

  it('a create the API server fails (503) is tried again later, with jitter; a refusal (403) is not', async () => {
    const { api, events } = await setup(60_000, undefined, [{ status: 503, fixture: 'forbidden.json' }, { status: 503, fixture: 'forbidden.json' }, CREATED] as Answers);
    events.record('Unchained', 'condition:net-dir', 'net.d is gone', 'Warning');
    await events.flush();
    expect(posts(api)).toHaveLength(3);
    events.dispose();
    const refused = await setup(60_000, undefined, { status: 403, fixture: 'forbidden.json' });
    refused.events.record('Unchained', 'condition:net-dir', 'net.d is gone', 'Warning');
    await refused.events.flush();
    expect(posts(refused.api)).toHaveLength(1);
    refused.events.dispose();
  }, 20_000);
});
