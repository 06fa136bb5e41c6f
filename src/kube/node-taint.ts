// Node gating (docs/design.md, Kubernetes): whoever brings the node up registers it with a NoSchedule
// startup taint (kubelet --register-with-taints, Karpenter startupTaints, a node pool's taints), and
// the agent takes it off its own Node once the loaded config is chained and the binary is in place,
// so that no pod is scheduled here before it can be meshed. A JSON patch whose `test` op holds the
// taints as read: a concurrent change to them (another agent's taint, a cordon) fails the patch
// instead of being lost, and the removal is read and tried again. Never added back.
import type { Logger } from '../log.js';
import type { ApiClient } from './api-client.js';

interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}
interface NodeObject {
  spec?: { taints?: Taint[] };
}

// Retries after an error, doubling: the API server being down must cost it a few requests a minute
// from each node at most.
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
// A patch refused for a concurrent change is read and tried again at once, a few times in a row.
const MAX_CONFLICTS = 5;

export type TaintOutcome = 'removed' | 'absent' | 'retry';

export class NodeTaint {
  private state: 'waiting' | 'removing' | 'done' = 'waiting';
  private retryMs = FIRST_RETRY_MS;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: ApiClient,
    private readonly nodeName: string,
    private readonly key: string,
    private readonly log: Logger,
    /** Told once the taint is off (or was never there). */
    private readonly onRemoved: (outcome: 'removed' | 'absent') => void = () => {},
  ) {}

  /** The node is ready to mesh pods: take the taint off, once. */
  ready(): void {
    if (this.state !== 'waiting') return;
    this.state = 'removing';
    void this.attempt();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.state = 'done';
  }

  private async attempt(): Promise<void> {
    if (this.state !== 'removing') return;
    let outcome: TaintOutcome;
    try {
      outcome = await this.removeOnce();
    } catch (err) {
      this.log.warn({ node: this.nodeName, taint: this.key, err: (err as Error).message, retryInS: this.retryMs / 1000 }, 'cannot remove the startup taint: trying again');
      outcome = 'retry';
    }
    if (this.state !== 'removing') return;
    if (outcome === 'retry') {
      this.timer = setTimeout(() => void this.attempt(), this.retryMs);
      this.timer.unref();
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
      return;
    }
    this.state = 'done';
    if (outcome === 'removed') this.log.info({ node: this.nodeName, taint: this.key }, 'removed the startup taint: pods may be scheduled on this node');
    this.onRemoved(outcome);
  }

  /** One read and patch, again while another writer changes the taints under us. */
  private async removeOnce(): Promise<TaintOutcome> {
    const nodePath = `/api/v1/nodes/${encodeURIComponent(this.nodeName)}`;
    for (let conflict = 0; conflict < MAX_CONFLICTS; conflict++) {
      const node = await this.client.get<NodeObject>(nodePath);
      if (node.status !== 200) throw new Error(`GET node answered ${node.status}`);
      const taints = node.body?.spec?.taints ?? [];
      if (!taints.some((t) => t.key === this.key)) return 'absent';
      const patch = [
        { op: 'test', path: '/spec/taints', value: taints },
        { op: 'replace', path: '/spec/taints', value: taints.filter((t) => t.key !== this.key) },
      ];
      const answer = await this.client.send(`PATCH`, nodePath, patch, 'application/json-patch+json');
      if (answer.status === 200) return 'removed';
      // The test op failed (422) or a conflict (409): the taints changed since we read them.
      if (answer.status !== 422 && answer.status !== 409) throw new Error(`PATCH node answered ${answer.status}`);
    }
    return 'retry';
  }
}
