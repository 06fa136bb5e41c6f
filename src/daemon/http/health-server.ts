// HTTP probes and metrics on HEALTH_PORT: /healthz (alive), /readyz (every config chained), /metrics.
// The same class serves METRICS_PORT with /metrics alone (`routes: 'metrics'`): a second server, with
// connections of its own, so that what reaches the metrics port never touches the probes.
// (node:http reaches the bundled CLI through require(), as every built-in does: scripts/bundle.mjs.)
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../../log.js';
import type { Metrics } from '../shared/metrics.js';
import type { ReadinessReport } from '../shared/readiness.js';
import { monotonicMs } from '../../monotonic-ms.js';

export interface HealthSource {
  /** The watches are in place. */
  alive(): boolean;
  /** What /readyz answers: the verdict and its reasons as text. */
  readiness(): Pick<ReadinessReport, 'ready' | 'reasons'>;
}

// A loop stalled this long (a hung filesystem call, say) is reported unhealthy so kubelet restarts us.
// The stall is measured as the ticker's lateness: when the loop comes back, the ticker runs before the
// probe is served, so "time since the last tick" would always look fresh. A stall is reported for
// STALL_REPORT_MS afterwards, long enough for kubelet's next probes to see it.
// The ticker runs at node:http's own connections check (CONNECTIONS_CHECK_MS, below) and starts with
// it, on 'listening' (Node's _http_server.js starts its interval there): two intervals of one
// duration started in one turn have the same start time in Node's timer list, so they expire in one
// wake-up of the loop, and keep doing so. Started apart, they woke an idle agent twice a second
// (strace: epoll_pwait returning 9-12 ms apart), each wake-up ~0.3 ms of CPU (docs/performance.md, Idle).
const TICK_MS = 1_000;
// How often node:http looks for requests past their timeouts (below): a client that never finishes
// its headers is cut off within a second of HEADERS_TIMEOUT_MS.
const CONNECTIONS_CHECK_MS = TICK_MS;
const MAX_LOOP_STALL_MS = 5_000;
// The loop may be fine while libuv's thread pool is not: a hung fsync or read on a dead disk holds a
// pool thread, and with every thread held no file I/O completes. At each liveness probe a trivial
// pool job (a stat of the root) is sent unless the last one is still out; one out this long fails
// the probe, and the kubelet restarts the container.
const MAX_POOL_STALL_MS = 10_000;
const STALL_REPORT_MS = 60_000;

// Probes come every few seconds from kubelet on the same node; nothing legitimate takes long.
const HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;
const KEEP_ALIVE_MS = 5_000;
const MAX_CONNECTIONS = 64;

/** Control characters as \\uXXXX escapes: a newline in a file name cannot forge a line of the report. */
export function escapeControl(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export class HealthServer {
  private readonly server: Server;
  private lastTick = monotonicMs();
  private lastStallAt = -Infinity;
  private lastStallMs = 0;
  /** While listening, where /healthz is served: a metrics-only server has no stall to report. */
  private ticker: NodeJS.Timeout | undefined;
  private registry: Promise<Registry> | undefined;
  /** When the pool job still out was sent (monotonic ms), or undefined. */
  private poolJobSince: number | undefined;

  constructor(
    private readonly source: HealthSource,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    /** Builds the Prometheus exposition at the first scrape (a parameter so that tests can fail it). */
    private readonly loadRegistry: (metrics: Metrics) => Promise<Registry> = async (m) => (await import('./prometheus.js')).prometheusRegistry(m),
    /** What this server answers: the probes and /metrics, or /metrics alone. */
    private readonly routes: 'probes' | 'metrics' = 'probes',
    /** One trivial job on libuv's thread pool, and how long it may be out (tests hang it). */
    private readonly pool: { job: () => Promise<unknown>; stallMs: number } = { job: () => stat('/'), stallMs: MAX_POOL_STALL_MS },
  ) {
    // A request that fails is answered 500 and logged: an unhandled rejection would end the process
    // (Node's default), and with it the watch, over a scrape.
    // On the host's network anything on the node may connect: a client that never finishes its request
    // is cut off, and connections are capped, so that kubelet's probes are always answered.
    this.server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: CONNECTIONS_CHECK_MS, maxHeaderSize: 8 << 10 }, (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.log.error({ url: req.url, err: (err as Error).message }, 'health server: request failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${escapeControl((err as Error).message)}\n`);
      });
    });
    this.server.maxConnections = MAX_CONNECTIONS;
    this.server.keepAliveTimeout = KEEP_ALIVE_MS;
    if (routes === 'probes') {
      // After node:http's own 'listening' handler (the constructor added it), in the same emit.
      this.server.on('listening', () => this.startTicker());
      this.server.on('close', () => this.stopTicker());
    }
  }

  private startTicker(): void {
    this.stopTicker();
    this.lastTick = monotonicMs();
    this.ticker = setInterval(() => this.tick(), TICK_MS);
    this.ticker.unref();
  }

  private stopTicker(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  /** How long the pool job still out has been out, once that is too long; sends one if none is out. */
  private checkPool(): number | undefined {
    const now = monotonicMs();
    if (this.poolJobSince !== undefined) {
      const out = Math.round(now - this.poolJobSince);
      return out >= this.pool.stallMs ? out : undefined;
    }
    this.poolJobSince = now;
    this.pool.job().then(
      () => (this.poolJobSince = undefined),
      () => (this.poolJobSince = undefined),
    );
    return undefined;
  }

  private tick(): void {
    const now = monotonicMs();
    const late = now - this.lastTick - TICK_MS;
    this.lastTick = now;
    if (late >= MAX_LOOP_STALL_MS) {
      this.lastStallAt = now;
      this.lastStallMs = Math.round(late);
    }
  }

  /** `::` listens dual-stack; a node without IPv6 falls back to 0.0.0.0. */
  async listen(port: number, host = '::'): Promise<number> {
    try {
      return await this.listenOn(port, host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (host === '::' && (code === 'EAFNOSUPPORT' || code === 'EADDRNOTAVAIL')) return this.listenOn(port, '0.0.0.0');
      throw err;
    }
  }

  private listenOn(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops listening, and with it the stall ticker (the port goes to another instance, or the agent stops); listen() may be called again. */
  unlisten(): Promise<void> {
    if (!this.server.listening) return Promise.resolve();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  get listening(): boolean {
    return this.server.listening;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (this.routes === 'probes' && url === '/healthz') {
      this.tick(); // a stall still going on when the probe is served counts too
      const stalled = monotonicMs() - this.lastStallAt < STALL_REPORT_MS;
      const poolStalledMs = this.checkPool();
      if (!this.source.alive()) send(503, 'not watching\n');
      else if (stalled) send(503, `event loop stalled for ${this.lastStallMs} ms\n`);
      else if (poolStalledMs !== undefined) send(503, `file I/O stalled: a thread-pool job has been out for ${poolStalledMs} ms\n`);
      else send(200, 'ok\n');
      return;
    }
    if (this.routes === 'probes' && url === '/readyz') {
      const report = this.source.readiness();
      // Reasons carry config names and error text: one line each, whatever a name holds.
      send(report.ready ? 200 : 503, report.ready ? 'ready\n' : `not ready:\n${report.reasons.map((r) => `- ${escapeControl(r)}\n`).join('')}`);
      return;
    }
    if (url === '/metrics') {
      // prom-client is loaded at the first scrape (metrics.ts says why), from a file of its own
      // (scripts/bundle.mjs); if that fails, the next scrape tries again.
      this.registry ??= this.loadRegistry(this.metrics);
      const registry = await this.registry.catch((err: unknown) => {
        this.registry = undefined;
        throw err;
      });
      send(200, await registry.metrics(), registry.contentType);
      return;
    }
    send(404, 'not found\n');
  }
}
