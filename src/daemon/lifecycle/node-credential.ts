// The node's credential and the stop's question, kept so that both outlive this pod (docs/design.md,
// The node's credential). Before the first kubeconfig write, a node-bound token an earlier agent left
// in the kubeconfig is adopted (offline: its claims name this node and this account); after the start,
// off the hot path, the pod's DaemonSet is learned and a node token asked for and renewed
// (kube/node-token-renewal.ts). The API client and the renewal are loaded only then, and only where
// POD_NAME, NODE_NAME and a token are there.
import type { Config } from '../../config.js';
import type { ApiClient } from '../../kube/api-client.js';
import { Credentials } from '../../kube/credentials.js';
import type { NodeTokenRenewal } from '../../kube/node-token-renewal.js';
import type { StopFacts } from '../../kube/stop-decision.js';
import type { Logger } from '../../log.js';

// The owner lookup at start: a slow API server never holds anything up, it only leaves the owner to
// be asked at the stop.
const START_REQUEST_MS = 10_000;

export class NodeCredential {
  readonly credentials: Credentials;
  private owner: StopFacts['owner'] | undefined;
  private renewal: NodeTokenRenewal | undefined;
  private disposed = false;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    /** A new node token is held: write the kubeconfig again. */
    private readonly onRenewed: () => void,
  ) {
    this.credentials = new Credentials(config.serviceAccountDir, config.nodeName);
  }

  /** The kubeconfig on disk holds a token bound to this node: carry it on (no write, no API call). */
  adopt(tokenOnDisk: string | undefined): void {
    if (this.credentials.adopt(tokenOnDisk)) this.log.info({ node: this.config.nodeName }, 'the kubeconfig carries a token bound to this node: keeping it');
  }

  /** After the start: the pod's DaemonSet, and a node token. */
  async start(): Promise<void> {
    const { config } = this;
    if ((config.pod === undefined && config.nodeName === undefined) || this.credentials.podToken() === undefined) return;
    const [{ ApiClient }, { NodeTokenRenewal }, { podOwner }] = await Promise.all([
      import('../../kube/api-client.js'),
      import('../../kube/node-token-renewal.js'),
      import('../../kube/stop-facts.js'),
    ]);
    const podClient = ApiClient.inCluster(config, START_REQUEST_MS, () => this.credentials.podToken());
    if (podClient === undefined || this.disposed) return;
    if (config.nodeName !== undefined) {
      this.renewal = new NodeTokenRenewal(podClient, this.credentials, this.log, () => this.onRenewed());
      this.renewal.start();
    }
    if (config.pod === undefined) return;
    const owner = await podOwner(podClient, config.pod.namespace, config.pod.name);
    if ('name' in owner) this.owner = owner;
  }

  /** What the stop needs to know, asked now within `timeoutMs` per request (kube/stop-facts.ts). */
  async stopFacts(timeoutMs: number): Promise<StopFacts | undefined> {
    const { config } = this;
    if (config.pod === undefined) return undefined;
    const [{ ApiClient }, { askStop, podOwner }] = await Promise.all([import('../../kube/api-client.js'), import('../../kube/stop-facts.js')]);
    const podClient = ApiClient.inCluster(config, timeoutMs, () => this.credentials.podToken());
    const nodeToken = this.credentials.nodeToken()?.token;
    const nodeClient: ApiClient | undefined = nodeToken === undefined ? undefined : ApiClient.inCluster(config, timeoutMs, () => nodeToken);
    if (podClient === undefined && nodeClient === undefined) return undefined;
    const owner = this.owner ?? (podClient === undefined ? { unknown: "it was not learned at start, and this pod has no token to ask with" } : await podOwner(podClient, config.pod.namespace, config.pod.name));
    return askStop({ node: nodeClient, pod: podClient }, config.pod.namespace, owner, config.nodeName);
  }

  dispose(): void {
    this.disposed = true;
    this.renewal?.dispose();
  }
}
