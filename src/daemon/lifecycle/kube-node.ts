// What the agent tells Kubernetes about its node (docs/design.md, Kubernetes): the startup taint comes
// off once the node is ready (kube/node-taint.ts), and readiness changes become Events on the Node
// (kube/node-events.ts), chosen by node-event-table.ts from the typed reasons. Driven by readiness
// alone, off the hot path: the API's answers are never waited for, and its absence changes nothing on
// the node. Loaded on the first readiness change, and only where NODE_NAME and a token are set.
import type { Config } from '../../config.js';
import type { Credentials } from '../../kube/credentials.js';
import type { Logger } from '../../log.js';
import type { NodeEvents } from '../../kube/node-events.js';
import type { NodeTaint } from '../../kube/node-taint.js';
import type { NotReady } from '../shared/readiness.js';
import { nodeEventOf } from './node-event-table.js';

const REQUEST_TIMEOUT_MS = 10_000;

export class KubeNode {
  private wasReady = false;

  private constructor(
    private readonly taint: NodeTaint,
    private readonly events: NodeEvents,
    private readonly mode: Config['mode'],
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
    return new KubeNode(taint, events, config.mode);
  }

  readinessChanged(ready: boolean, entries: readonly NotReady[]): void {
    if (ready) {
      void this.taint.ready();
      this.events.record('Chained', 'ready', 'every config the runtime may load is chained, and the plugin binary is in place', 'Normal');
      this.wasReady = true;
      return;
    }
    for (const entry of entries) {
      const event = nodeEventOf(entry, this.mode);
      if (event === undefined) continue;
      // Not ready while starting goes without saying; an unchained node after being ready does not.
      if (event.reason === 'Unchained' && !this.wasReady) continue;
      this.events.record(event.reason, event.key, event.note, event.type);
    }
  }

  /** The stop is an uninstall: said on the Node, waited for at most `withinMs`. */
  async uninstalling(reason: string, withinMs: number): Promise<void> {
    this.events.record('Uninstall', 'uninstall', `removing the plugin from every config: ${reason}`, 'Normal');
    await Promise.race([this.events.flush(), new Promise((resolve) => setTimeout(resolve, withinMs).unref())]);
  }

  dispose(): void {
    this.taint.dispose();
    this.events.dispose();
  }
}
