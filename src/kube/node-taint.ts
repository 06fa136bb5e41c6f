// Node gating (docs/design.md, Kubernetes): whoever brings the node up registers it with a NoSchedule
// startup taint (kubelet --register-with-taints, Karpenter startupTaints, a node pool's taints), and
// the agent takes it off its own Node once the loaded config is chained and the binary is in place,
// so that no pod is scheduled here before it can be meshed. A JSON patch whose `test` op holds the
// taints as read: a concurrent change to them (another agent's taint, a cordon) fails the patch
// instead of being lost, and the removal is read and tried again at once. Never added back.
//
// A denial (403: the node-taint policy refused it, NODE_TAINT_KEY differs from the policy's, the RBAC
// is missing) is logged once with the API server's words, then tried again with backoff: a fixed
// manifest makes it pass without a restart. Every retry is jittered: a fleet whose API server comes
// back must not retry in the same second.
import type { Logger } from '../log.js';
import type { ApiClient } from './api-client.js';
import { jittered } from './jitter.js';

interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}
interface NodeObject {
  spec?: { taints?: Taint[] };
}
interface Status {
  message?: string;
  reason?: string;
}

// Retries double from 1 s to 15 s, each jittered ±20%. The cap is what a node pays after an API
// server outage: a node whose retry just missed the return stays tainted for up to the cap (with 60 s,
// the fleet bench's last node waited 67 s after a 60 s outage; docs/performance.md, Fleet). At 15 s a
// node's retries stay rarer than its kubelet's Lease renewals (every 10 s), and the jitter spreads
// them out (docs/performance.md, Fleet: requests a second after the outage).
export const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 15_000;

/** The wait before the next retry (before jitter), after one of `ms`. */
export function nextRetryMs(ms: number): number {
  return Math.min(ms * 2, MAX_RETRY_MS);
}
// A patch whose test op failed (the taints changed meanwhile) is read and tried again at once.
const MAX_CONFLICTS = 5;

export type TaintOutcome = 'removed' | 'absent' | 'stopped';

/** Why one attempt did not take the taint off. */
type Attempt = { kind: 'done'; outcome: 'removed' | 'absent' } | { kind: 'denied'; message: string } | { kind: 'failed'; message: string };

/** True for a 422 that is a failed `test` op, not a policy's denial without a reason (older manifests). */
function isFailedTest(answer: { status: number; body: Status | undefined }): boolean {
  return answer.status === 409 || (answer.status === 422 && !/denied request|ValidatingAdmissionPolicy/.test(answer.body?.message ?? ''));
}

export class NodeTaint {
  private state: 'waiting' | 'removing' | 'done' = 'waiting';
  private retryMs = FIRST_RETRY_MS;
  private timer: NodeJS.Timeout | undefined;
  private lastProblem: string | undefined;
  private finished: ((outcome: TaintOutcome) => void) | undefined;
  private readonly result: Promise<TaintOutcome>;

  constructor(
    private readonly client: ApiClient,
    private readonly nodeName: string,
    private readonly key: string,
    private readonly log: Logger,
  ) {
    this.result = new Promise((resolve) => (this.finished = resolve));
  }

  /** The node is ready to mesh pods: take the taint off, once. Resolves when it is off, was never there, or the agent stops. */
  ready(): Promise<TaintOutcome> {
    if (this.state === 'waiting') {
      this.state = 'removing';
      void this.attempt();
    }
    return this.result;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.state = 'done';
    this.finished?.('stopped');
  }

  private async attempt(): Promise<void> {
    if (this.state !== 'removing') return;
    let attempt: Attempt;
    try {
      attempt = await this.removeOnce();
    } catch (err) {
      attempt = { kind: 'failed', message: `no answer (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
    }
    if (this.state !== 'removing') return;
    if (attempt.kind === 'done') {
      this.state = 'done';
      if (attempt.outcome === 'removed') this.log.info({ node: this.nodeName, taint: this.key }, 'removed the startup taint: pods may be scheduled on this node');
      this.finished?.(attempt.outcome);
      return;
    }
    // Once per distinct problem: a denial stays a denial, an API server that stays down stays down.
    if (attempt.message !== this.lastProblem) {
      this.lastProblem = attempt.message;
      if (attempt.kind === 'denied') this.log.error({ node: this.nodeName, taint: this.key, denial: attempt.message }, 'the API server refused to remove the startup taint: pods cannot be scheduled on this node until it is removed');
      else this.log.warn({ node: this.nodeName, taint: this.key, problem: attempt.message, retryInS: Math.round(this.retryMs / 1000) }, 'cannot remove the startup taint: trying again');
    }
    this.timer = setTimeout(() => void this.attempt(), jittered(this.retryMs, 0.2));
    this.timer.unref();
    this.retryMs = nextRetryMs(this.retryMs);
  }

  /** One read and patch, again at once while another writer changes the taints under us. */
  private async removeOnce(): Promise<Attempt> {
    const nodePath = `/api/v1/nodes/${encodeURIComponent(this.nodeName)}`;
    for (let conflict = 0; conflict < MAX_CONFLICTS; conflict++) {
      const node = await this.client.get<NodeObject & Status>(nodePath);
      if (node.status === 403) return { kind: 'denied', message: node.body?.message ?? 'GET node answered 403' };
      if (node.status !== 200) return { kind: 'failed', message: `GET node answered ${node.status}` };
      const taints = node.body?.spec?.taints ?? [];
      if (!taints.some((t) => t.key === this.key)) return { kind: 'done', outcome: 'absent' };
      const patch = [
        { op: 'test', path: '/spec/taints', value: taints },
        { op: 'replace', path: '/spec/taints', value: taints.filter((t) => t.key !== this.key) },
      ];
      const answer = await this.client.send<Status>('PATCH', nodePath, patch, 'application/json-patch+json');
      if (answer.status === 200) return { kind: 'done', outcome: 'removed' };
      if (isFailedTest(answer)) continue;
      if (answer.status === 403 || answer.status === 422) return { kind: 'denied', message: answer.body?.message ?? `PATCH node answered ${answer.status}` };
      return { kind: 'failed', message: `PATCH node answered ${answer.status}` };
    }
    return { kind: 'failed', message: `the taints kept changing (${MAX_CONFLICTS} patches refused in a row)` };
  }
}
