// HealthServer: a request whose handling fails is answered 500 and logged, and the process keeps
// serving (an unhandled rejection would end it, and the watch with it). The Prometheus exposition,
// loaded at the first scrape, is loaded again at the next scrape if that failed.
import { pino } from 'pino';
import type { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthServer } from '../../src/daemon/health-server.js';
import { Metrics } from '../../src/daemon/metrics.js';
import { prometheusRegistry } from '../../src/daemon/prometheus.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function start(loadRegistry: (metrics: Metrics) => Promise<Registry>) {
  const lines: Array<{ msg: string; url?: string; err?: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  const metrics = new Metrics('0.0.0', 'native');
  server = new HealthServer({ alive: () => true, readiness: () => ({ ready: true, reasons: [] }) as never }, metrics, log, loadRegistry);
  return { lines, metrics, listen: () => server!.listen(0, '127.0.0.1') };
}

const get = async (port: number, p: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  return { status: res.status, body: await res.text() };
};

describe('HealthServer', () => {
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
});
