// HEALTH_PORT on the host's network, shared by every instance on the node. During an upgrade with
// maxSurge the newer pod starts while the older one still runs and listens on the port; the older is
// removed only once the newer is ready, which kubelet learns from the port. So the newer waits for
// the port while another live instance owns the node, and that instance lets go of the port when it
// stands down (the newer claims the node as it starts). A rollback hands it back the same way. A port
// held by anything else is a configuration error (exit 2, cli.ts).
import { errnoCode } from '../../fs/errno.js';
import type { Logger } from '../../log.js';
import type { HealthServer } from './health-server.js';

const RETRY_MS = 250;

export class HealthPort {
  private retry: NodeJS.Timeout | undefined;
  private trying = false;
  /** False while this instance has handed the port to a newer one. */
  private wanted = true;

  constructor(
    private readonly server: HealthServer,
    readonly port: number,
    readonly host: string,
    private readonly log: Logger,
    /** True when another live instance owns the node (and so may hold the port). */
    private readonly ownerMayHoldPort: () => boolean,
    /** The variable that names the port, for messages. */
    readonly variable: 'HEALTH_PORT' | 'METRICS_PORT' = 'HEALTH_PORT',
  ) {}

  /** Listens now, or waits for the instance that owns the node; throws any other listen error. */
  async start(): Promise<void> {
    try {
      await this.listen();
    } catch (err) {
      if (errnoCode(err) !== 'EADDRINUSE' || !this.ownerMayHoldPort()) throw err;
      this.log.warn({ port: this.port }, `${this.variable} is held by the instance that owns this node (an upgrade): serving probes once it stands down`);
      this.retryUntilListening();
    }
  }

  /** This instance stood down: the newer one gets the port. */
  async release(): Promise<void> {
    this.wanted = false;
    this.stopRetrying();
    if (!this.server.listening) return;
    await this.server.unlisten();
    this.log.info({ port: this.port }, `released ${this.variable} to the instance that took over`);
  }

  /** This instance took the node back: listen again, as soon as the port is free. */
  reclaim(): void {
    this.wanted = true;
    if (!this.server.listening) this.retryUntilListening();
  }

  async close(): Promise<void> {
    this.stopRetrying();
    await this.server.unlisten();
  }

  private async listen(): Promise<void> {
    const port = await this.server.listen(this.port, this.host);
    this.log.info({ port, host: this.host, variable: this.variable }, this.variable === 'HEALTH_PORT' ? 'health server listening' : 'metrics server listening');
  }

  private retryUntilListening(): void {
    if (this.retry !== undefined) return;
    this.retry = setInterval(() => void this.tryAgain(), RETRY_MS);
    this.retry.unref();
  }

  private async tryAgain(): Promise<void> {
    if (this.trying || this.server.listening) return;
    this.trying = true;
    try {
      await this.listen();
      this.stopRetrying();
      // Released while this listen was under way: the port is the newer instance's.
      if (!this.wanted) await this.release();
    } catch (err) {
      if (errnoCode(err) !== 'EADDRINUSE') this.log.error({ port: this.port, code: errnoCode(err) }, `cannot listen on ${this.variable}`);
    } finally {
      this.trying = false;
    }
  }

  private stopRetrying(): void {
    clearInterval(this.retry);
    this.retry = undefined;
  }
}
