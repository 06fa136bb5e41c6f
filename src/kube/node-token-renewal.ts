// Keeps a token bound to this Node (docs/design.md, The node's credential): asked of the TokenRequest
// API with the pod's own token (`POST serviceaccounts/<sa>/token`, boundObjectRef kind Node, GA since
// Kubernetes 1.33 and on by default since 1.31), renewed at half its life by whichever agent runs on
// the node, retried with backoff and jitter when refused or unanswered. The token policy of the
// manifests (token-request-policy) lets a pod's token ask only for a token bound to its own node; a
// node-bound token cannot ask for another, so one that leaks from net.d dies with its lifetime.
import type { Logger } from '../log.js';
import type { ApiClient } from './api-client.js';
import type { Credentials, HeldToken } from './credentials.js';
import { jittered } from './jitter.js';
import { renewalDue } from './token-claims.js';

/** A day: the kubelet's default lifetime for projected tokens is an hour; a node outlives a pod for longer. */
export const NODE_TOKEN_SECONDS = 24 * 3600;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 10 * 60_000;
// setTimeout's largest delay (2^31 - 1 ms); a longer wait is taken in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

interface TokenRequestAnswer {
  status?: { token?: string; expirationTimestamp?: string };
  message?: string;
}

export class NodeTokenRenewal {
  private timer: NodeJS.Timeout | undefined;
  private retryMs = FIRST_RETRY_MS;
  private lastProblem: string | undefined;
  private disposed = false;

  constructor(
    /** The API server with the pod's own token: only a pod's token may ask (the token policy). */
    private readonly podClient: ApiClient,
    private readonly credentials: Credentials,
    private readonly log: Logger,
    /** A new token is held: the kubeconfig is written again. */
    private readonly onRenewed: (held: HeldToken) => void,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Asks now when no node token is held, or the one adopted is due; else waits until it is. */
  start(): void {
    const held = this.credentials.nodeToken();
    if (held === undefined) void this.request();
    else this.renewAt(held);
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }

  private renewAt(held: HeldToken): void {
    const dueMs = renewalDue(held.claims) * 1000 - this.nowMs();
    this.schedule(jittered(Math.max(0, dueMs), 0.1));
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.disposed) return;
    this.timer = setTimeout(() => (ms > MAX_TIMER_MS ? this.schedule(ms - MAX_TIMER_MS) : void this.request()), Math.min(ms, MAX_TIMER_MS));
    this.timer.unref();
  }

  private async request(): Promise<void> {
    const pod = this.credentials.podClaims();
    const nodeName = this.credentials.nodeName;
    if (pod === undefined || nodeName === undefined) return;
    const apiPath = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/serviceaccounts/${encodeURIComponent(pod.serviceAccount.name)}/token`;
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: NODE_TOKEN_SECONDS, boundObjectRef: { apiVersion: 'v1', kind: 'Node', name: nodeName } },
    };
    let problem: string;
    try {
      const answer = await this.podClient.send<TokenRequestAnswer>('POST', apiPath, body);
      const token = answer.body?.status?.token;
      const held = answer.status === 201 && token !== undefined ? this.credentials.hold(token) : undefined;
      if (held !== undefined) {
        if (this.disposed) return;
        this.retryMs = FIRST_RETRY_MS;
        if (this.lastProblem !== undefined) this.log.info({ node: nodeName }, 'holding a token bound to this node again');
        this.lastProblem = undefined;
        this.log.info({ node: nodeName, expires: new Date(held.claims.expiresAt * 1000).toISOString() }, 'the kubeconfig carries a token bound to this node: it outlives this pod');
        this.onRenewed(held);
        this.renewAt(held);
        return;
      }
      problem = `the API server answered ${answer.status}${answer.body?.message === undefined ? '' : `: ${answer.body.message}`}`;
    } catch (err) {
      problem = `no answer (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
    }
    if (this.disposed) return;
    // Once per distinct problem: an API server that stays down must not fill the log.
    if (problem !== this.lastProblem) {
      this.log.warn({ node: nodeName, problem, retryInS: Math.round(this.retryMs / 1000) }, 'cannot get a token bound to this node: the kubeconfig keeps the token it has (the pod\'s own dies with this pod)');
      this.lastProblem = problem;
    }
    this.schedule(jittered(this.retryMs, 0.2));
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }
}
