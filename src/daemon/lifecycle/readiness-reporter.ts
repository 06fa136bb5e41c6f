// Readiness as output (docs/design.md, Readiness): each change of the node's readiness is logged once,
// exported as the `ready` gauge, and told to the API server (kube-node.ts: the startup taint and the
// node's Events), never waited for. The readiness itself is read, never written, here.
import type { Config } from '../../config.js';
import type { Credentials } from '../../kube/credentials.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../shared/metrics.js';
import type { Condition, NotReady, Readiness } from '../shared/readiness.js';
import type { KubeNode } from './kube-node.js';
import type { PhaseState } from '../shared/phase.js';

export class ReadinessReporter {
  private lastReady = false; // "not ready" while starting goes without saying
  /** Once the start is done, the first readiness is told to Kubernetes whatever it is. */
  private toldKubernetes = false;
  /** The taint and the Events of this node (kube-node.ts), loaded at the first readiness it tells. */
  private kubeNode: Promise<KubeNode | undefined> | undefined;

  constructor(
    private readonly config: Config,
    private readonly credentials: Credentials,
    private readonly readiness: Readiness,
    private readonly lifecycle: Condition,
    private readonly phase: PhaseState,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** After events, passes and condition changes: reports readiness if it changed. */
  update(): void {
    if (this.phase.ending) return;
    const ready = this.readiness.ready;
    const firstAfterStart = !this.toldKubernetes && !this.lifecycle.failing;
    if (ready === this.lastReady && !firstAfterStart) return;
    this.lastReady = ready;
    this.metrics.ready.set(ready ? 1 : 0);
    const report = this.readiness.report();
    if (ready) this.log.info('ready: every config is chained');
    else this.log.info({ reasons: report.reasons }, 'not ready');
    if (!this.lifecycle.failing) {
      this.toldKubernetes = true;
      this.tellKubernetes(ready, report.entries);
    }
  }

  /** The uninstall's Event, within `ms`, if this node talks to the API server at all. */
  async uninstalling(reason: string, ms: number): Promise<void> {
    await (await this.kubeNode)?.uninstalling(reason, ms);
  }

  dispose(): void {
    void this.kubeNode?.then((node) => node?.dispose());
  }

  private tellKubernetes(ready: boolean, entries: NotReady[]): void {
    if (this.config.nodeName === undefined) return;
    this.kubeNode ??= import('./kube-node.js')
      .then(({ KubeNode }) => KubeNode.create(this.config, this.credentials, this.log))
      .catch((err: unknown) => {
        this.log.warn({ err: (err as Error).message }, 'cannot talk to the API server about this node');
        return undefined;
      });
    void this.kubeNode.then((node) => node?.readinessChanged(ready, entries));
  }
}
