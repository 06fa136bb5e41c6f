// HTTP probes and metrics on HEALTH_PORT: /healthz (alive), /readyz (every config chained), /metrics.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';
import type { ReadinessReport } from './readiness.js';

export interface HealthSource {
  /** The watches are in place. */
  alive(): boolean;
  readiness(): ReadinessReport;
}

// A loop stalled this long (a hung filesystem call, say) is reported unhealthy so kubelet restarts us.
const MAX_LOOP_STALL_MS = 5_000;

export class HealthServer {
  private readonly server: http.Server;
  private lastTick = Date.now();
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly source: HealthSource,
    private readonly metrics: Metrics,
  ) {
    this.ticker = setInterval(() => (this.lastTick = Date.now()), 1_000);
    this.ticker.unref();
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  listen(port: number, host = '0.0.0.0'): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve((this.server.address() as AddressInfo).port));
    });
  }

  close(): Promise<void> {
    clearInterval(this.ticker);
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (url === '/healthz') {
      const stalled = Date.now() - this.lastTick > MAX_LOOP_STALL_MS;
      if (!this.source.alive()) send(503, 'not watching\n');
      else if (stalled) send(503, 'event loop stalled\n');
      else send(200, 'ok\n');
      return;
    }
    if (url === '/readyz') {
      const report = this.source.readiness();
      send(report.ready ? 200 : 503, report.ready ? 'ready\n' : `not ready:\n${report.reasons.map((r) => `- ${r}\n`).join('')}`);
      return;
    }
    if (url === '/metrics') {
      send(200, await this.metrics.registry.metrics(), this.metrics.registry.contentType);
      return;
    }
    send(404, 'not found\n');
  }
}
