// An API server that gives recorded answers (test/fixtures/api/) on loopback, for the agent's calls
// to the API server without a cluster. Each path gets a status and a fixture, or no answer at all.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach } from 'vitest';
import { repoRoot } from './addon-path.js';

/** A status and a recorded body (a fixture), or a body made by the test; or no answer at all. */
export type Answer = ({ status: number; fixture: string } | { status: number; body: unknown }) & { delayMs?: number } | 'no answer';
/** One answer for every request, or one per request in turn (the last one repeats). */
export type Answers = Answer | Answer[];

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

export function apiFixture(name: string): string {
  return readFileSync(path.join(repoRoot, 'test', 'fixtures', 'api', name), 'utf8');
}

export class RecordedApi {
  readonly requests: Array<{ method: string; url: string; authorization: string | undefined; body: string }> = [];
  /** Bearer tokens the server refuses (401), as the API server refuses a token whose pod, node or account is gone. */
  readonly refused = new Set<string>();
  private server!: Server;
  port = 0;

  constructor(private readonly answers: Record<string, Answers>) {}

  private answerFor(key: string): Answer | undefined {
    const found = this.answers[key];
    if (!Array.isArray(found)) return found;
    return found.length > 1 ? found.shift() : found[0];
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.requests.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
        if (this.refused.has((req.headers.authorization ?? '').replace(/^Bearer /, ''))) {
          res.writeHead(401, { 'content-type': 'application/json' }).end(apiFixture('unauthorized.json'));
          return;
        }
        const answer = this.answerFor(`${req.method} ${req.url}`) ?? this.answerFor(`${req.method} ${req.url!.replace(/\/[^/]+$/, '/*')}`);
        if (answer === 'no answer') return; // hangs until the client gives up
        if (answer === undefined) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(apiFixture('not-found.json'));
          return;
        }
        const send = () => res.writeHead(answer.status, { 'content-type': 'application/json' }).end('fixture' in answer ? apiFixture(answer.fixture) : JSON.stringify(answer.body));
        if (answer.delayMs === undefined) send();
        else setTimeout(send, answer.delayMs);
      });
    });
    servers.push(this.server);
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  /** The agent's environment for this server: plain HTTP on loopback, this pod and node. */
  env(): NodeJS.ProcessEnv {
    return { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(this.port), KUBERNETES_SERVICE_PROTOCOL: 'http', POD_NAME: 'linkerd-cni-x7k2p', POD_NAMESPACE: 'linkerd-cni' };
  }

  /** The requests sent with `token`, as `METHOD path`. */
  sentWith(token: string): string[] {
    return this.requests.filter((r) => r.authorization === `Bearer ${token}`).map((r) => `${r.method} ${r.url}`);
  }
}

export const POD = 'GET /api/v1/namespaces/linkerd-cni/pods/linkerd-cni-x7k2p';
export const DAEMONSET = 'GET /apis/apps/v1/namespaces/linkerd-cni/daemonsets/linkerd-cni';
export const NODE = 'GET /api/v1/nodes/node-1';
export const TOKEN_REQUEST = 'POST /api/v1/namespaces/linkerd-cni/serviceaccounts/linkerd-cni/token';
export const ACCESS_REVIEW = 'POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

/** The TokenRequest API's answer: `token`, bound to whatever the test made it for. */
export function tokenAnswer(token: string): Answer {
  return { status: 201, body: { kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', status: { token, expirationTimestamp: new Date(Date.now() + 86_400_000).toISOString() } } };
}
