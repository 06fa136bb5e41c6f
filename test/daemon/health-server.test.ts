// HealthServer: a request whose handling fails is answered 500 and logged, and the process keeps
// serving (an unhandled rejection would end it, and the watch with it). The Prometheus exposition,
// loaded at the first scrape, is loaded again at the next scrape if that failed.
import { connect } from 'node:net';
import { pino } from 'pino';
import type { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthServer } from '../../src/daemon/http/health-server.js';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { prometheusRegistry } from '../../src/daemon/http/prometheus.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.unlisten();
  server = undefined;
});

function start(loadRegistry: (metrics: Metrics) => Promise<Registry> = async (m) => prometheusRegistry(m), reasons: string[] = []) {
  const lines: Array<{ msg: string; url?: string; err?: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  const metrics = new Metrics('0.0.0', 'native');
  server = new HealthServer({ alive: () => true, readiness: () => ({ ready: reasons.length === 0, reasons }) }, metrics, log, loadRegistry);
  return { lines, metrics, listen: () => server!.listen(0, '127.0.0.1') };
}

const get = async (port: number, p: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, body: await res.text() };
};

describe('HealthServer', () => {
  it('fails /healthz while a thread-pool job is out too long (a hung fsync), and passes again once it is back', async () => {
    let release!: () => void;
    let hung = true;
    const job = () => (hung ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve());
    const log = pino({ level: 'silent' });
    server = new HealthServer({ alive: () => true, readiness: () => ({ ready: true, reasons: [] }) }, new Metrics('0.0.0', 'native'), log, undefined, 'probes', { job, stallMs: 200 });
    const port = await server.listen(0, '127.0.0.1');
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' }); // the job goes out
    await new Promise((resolve) => setTimeout(resolve, 250));
    const stalled = await get(port, '/healthz');
    expect(stalled.status).toBe(503);
    expect(stalled.body).toMatch(/^file I\/O stalled: a thread-pool job has been out for \d+ ms\n$/);
    hung = false;
    release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
  });

  it('answers 500 when the exposition cannot be loaded, keeps serving, and loads it at the next scrape', async () => {
    let loads = 0;
    const { lines, listen } = start(async (metrics) => {
      loads++;
      if (loads === 1) throw new Error("Cannot find module './cni-chainer-prometheus.mjs'");
      return prometheusRegistry(metrics);
    });
    const port = await listen();
    const failed = await get(port, '/metrics');
    expect(failed.status).toBe(500);
    expect(failed.body).toContain('cni-chainer-prometheus.mjs');
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'health server: request failed', url: '/metrics' }));
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    const metrics = await get(port, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^cni_chainer_patches_total 0$/m);
    expect(loads).toBe(2);
    await get(port, '/metrics');
    expect(loads).toBe(2); // loaded once it worked, not at every scrape
  });

  it('answers 500 when rendering the metrics throws, and the next scrape works', async () => {
    let fail = true;
    const { listen } = start(async (metrics) => {
      const registry = await prometheusRegistry(metrics);
      const render = registry.metrics.bind(registry);
      registry.metrics = () => (fail ? Promise.reject(new Error('collector failed')) : render());
      return registry;
    });
    const port = await listen();
    expect(await get(port, '/metrics')).toEqual({ status: 500, body: 'collector failed\n' });
    fail = false;
    expect((await get(port, '/metrics')).status).toBe(200);
  });

  it('escapes config names and error text in /readyz: a newline in a name cannot forge a line', async () => {
    const { listen } = start(undefined, ['10-a\n- 20-b.conflist: chained.conflist: invalid (x\u001b[31m)']);
    const port = await listen();
    const r = await get(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toBe('not ready:\n- 10-a\\u000a- 20-b.conflist: chained.conflist: invalid (x\\u001b[31m)\n');
  });

  it('cuts off a client that never finishes its headers, and caps connections: probes are still answered', async () => {
    const { listen } = start();
    const port = await listen();
    // 100 clients open a request and never finish it (slowloris).
    const sockets = Array.from({ length: 100 }, () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.resume(); // read the server's 408, so that its close is seen
      socket.write('GET /readyz HTTP/1.1\r\nHost: x\r\n');
      return socket;
    });
    const closed = sockets.map((socket) => new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now()))));
    const opened = Date.now();
    // Those over the cap are dropped at once, the others once the header timeout runs out.
    const times = await Promise.all(closed);
    expect(times.filter((t) => t - opened < 1_000).length).toBeGreaterThanOrEqual(100 - 64);
    expect(Math.max(...times) - opened).toBeLessThan(9_000);
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
  }, 20_000);
});
