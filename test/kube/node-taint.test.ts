// Node gating's patch: a test op on the taints as read, so that a concurrent change to them (here: a
// 422, the test failing) is read again and never overwritten; the other taints stay.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/kube/api-client.js';
import { NodeTaint } from '../../src/kube/node-taint.js';
import { RecordedApi } from '../helpers/api-answers.js';
import { tempDir } from '../helpers/tmp.js';

const NODE = '/api/v1/nodes/node-1';

describe('the startup taint', () => {
  it('is removed by a patch that tests the taints as read, read again when they changed meanwhile', async () => {
    const api = await new RecordedApi({
      [`GET ${NODE}`]: { status: 200, fixture: 'node-tainted.json' },
      [`PATCH ${NODE}`]: [{ status: 422, fixture: 'invalid-test-op.json' }, { status: 200, fixture: 'node-tainted.json' }],
    }).start();
    const dir = tempDir();
    writeFileSync(path.join(dir, 'token'), 'token-1');
    const client = new ApiClient({ server: `http://127.0.0.1:${api.port}`, token: () => 'token-1', caFile: undefined, timeoutMs: 2_000 });
    const outcome = await new Promise((resolve) => new NodeTaint(client, 'node-1', 'cni-chainer.io/agent-not-ready', pino({ level: 'silent' }), resolve).ready());
    expect(outcome).toBe('removed');
    expect(api.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${NODE}`, `PATCH ${NODE}`, `GET ${NODE}`, `PATCH ${NODE}`]);
    const patch = JSON.parse(api.requests[3]!.body) as Array<{ op: string; path: string; value: unknown }>;
    expect(patch).toEqual([
      { op: 'test', path: '/spec/taints', value: [{ key: 'cni-chainer.io/agent-not-ready', effect: 'NoSchedule' }, { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
      { op: 'replace', path: '/spec/taints', value: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
    ]);
  });
});
