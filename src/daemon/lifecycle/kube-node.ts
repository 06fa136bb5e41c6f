// What the agent tells Kubernetes about its node (docs/design.md, Kubernetes): the startup taint comes
// off once the node is ready (kube/node-taint.ts), and readiness changes become Events on the Node
// (kube/node-events.ts). Driven by readiness alone, off the hot path: the API's answers are never
// waited for, and its absence changes nothing on the node. Loaded on the first readiness change, and
// only where NODE_NAME and a service-account token are set.
import type { Config } from '../../config.js';
import type { Credentials } from '../../kube/credentials.js';
import type { Logger } from '../../log.js';
import type { NodeEventReason, NodeEvents } from '../../kube/node-events.js';
import type { NodeTaint } from '../../kube/node-taint.js';

const REQUEST_TIMEOUT_MS = 10_000;

/** Which Event a not-ready reason is: its status word (readiness.ts) or condition says. */
function eventOf(reason: string): { reason: NodeEventReason; type: 'Warning' } {
  if (/: backoff\b/.test(reason)) return { reason: 'Fight', type: 'Warning' };
  if (/: no-binary\b/.test(reason) || /plugin binar/.test(reason)) return { reason: 'BinaryMissing', type: 'Warning' };
  if (/stale/.test(reason)) return { reason: 'StaleOwnedCopy', type: 'Warning' };
  return { reason: 'Unchained', type: 'Warning' };
}

export class KubeNode {
  private wasReady = false;

  private constructor(
    private readonly taint: NodeTaint,
    private readonly events: NodeEvents,
  ) {}

  /** Undefined outside Kubernetes: no NODE_NAME, or no token to talk with. */
  static async create(config: Config, credentials: Credentials, log: Logger): Promise<KubeNode | undefined> {
    if (config.nodeName === undefined) return undefined;
    const [{ ApiClient }, { NodeTaint }, { NodeEvents }] = await Promise.all([import('../../kube/api-client.js'), import('../../kube/node-taint.js'), import('../../kube/node-events.js')]);
    // The node's token when held: the uninstall's Event still goes out after this pod object is gone.
    const client = ApiClient.inCluster(config, REQUEST_TIMEOUT_MS, () => credentials.nodeToken()?.token ?? credentials.podToken());
    if (client === undefined) return undefined;
    const events = new NodeEvents(client, config.nodeName, config.pod?.name ?? config.nodeName, log);
    const taint = new NodeTaint(client, config.nodeName, config.taintKey, log);
    return new KubeNode(taint, events);
  }

  readinessChanged(ready: boolean, reasons: readonly string[]): void {
    if (ready) {
      this.taint.ready();
      this.events.record('Chained', 'every config the runtime may load is chained, and the plugin binary is in place', 'Normal');
      this.wasReady = true;
      return;
    }
    for (const reason of reasons) {
      const event = eventOf(reason);
      // Not ready while starting goes without saying; an unchained node after being ready does not.
      if (event.reason === 'Unchained' && !this.wasReady) continue;
      this.events.record(event.reason, reason, event.type);
    }
  }

  /** The stop is an uninstall: said on the Node, waited for at most `withinMs`. */
  async uninstalling(reason: string, withinMs: number): Promise<void> {
    this.events.record('Uninstall', `removing the plugin from every config: ${reason}`, 'Normal');
    await Promise.race([this.events.flush(), new Promise((resolve) => setTimeout(resolve, withinMs).unref())]);
  }

  dispose(): void {
    this.taint.dispose();
    this.events.dispose();
  }
}
