// The probes' ports: HEALTH_PORT, and METRICS_PORT when set (health-port.ts, health-server.ts). The
// daemon serves them as a step of its start, once the first scan's writes are on their way (node:http
// and its listen cost ~13 ms, measured with --cpu-prof, which no config waits for), hands them to a
// newer instance that takes the node over, takes them back with the node, and closes them last.
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { HealthPort } from './health-port.js';
import type { HealthSource } from './health-server.js';
import type { Metrics } from '../shared/metrics.js';

/** What the probes answer from, and whether another instance may hold the ports. */
export interface ProbeSource extends HealthSource {
  /** True when another live instance owns the node (during an upgrade it holds the ports). */
  ownerMayHoldPort(): boolean;
}

/** A port that cannot be listened on: a configuration error of `variable` (the CLI exits 2). */
export class ProbePortError extends Error {
  constructor(
    readonly variable: string,
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
  ) {
    super(`${variable}: cannot listen on ${host} port ${port}: ${code ?? 'unknown error'}`);
    this.name = 'ProbePortError';
  }
}

export class Probes {
  private ports: HealthPort[] = [];

  constructor(
    private readonly config: Config,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** Listens on every port (or waits for the instance that holds it); throws ProbePortError. */
  async serve(source: ProbeSource): Promise<void> {
    const { config, metrics, log } = this;
    if (config.healthPort === 0) return;
    const [{ HealthServer }, { HealthPort }] = await Promise.all([import('./health-server.js'), import('./health-port.js')]);
    const ownerMayHoldPort = () => source.ownerMayHoldPort();
    this.ports = [new HealthPort(new HealthServer(source, metrics, log), config.healthPort, config.healthHost, log, ownerMayHoldPort, 'HEALTH_PORT')];
    if (config.metricsPort !== 0) {
      this.ports.push(new HealthPort(new HealthServer(source, metrics, log, undefined, 'metrics'), config.metricsPort, config.metricsHost, log, ownerMayHoldPort, 'METRICS_PORT'));
    }
    for (const port of this.ports) {
      try {
        await port.start();
      } catch (err) {
        await this.close();
        throw new ProbePortError(port.variable, port.host, port.port, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
      }
    }
  }

  /** This instance stood down: the newer one gets the ports. */
  async standDown(): Promise<void> {
    await Promise.all(this.ports.map((p) => p.release()));
  }

  /** This instance took the node back: listen again as soon as the ports are free. */
  takeBack(): void {
    for (const port of this.ports) port.reclaim();
  }

  async close(): Promise<void> {
    const ports = this.ports;
    this.ports = [];
    await Promise.all(ports.map((p) => p.close()));
  }
}
