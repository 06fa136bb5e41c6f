// The agent's own calls to the API server (docs/design.md, Kubernetes), in-cluster as client-go makes
// them: the server from KUBERNETES_SERVICE_HOST/PORT (an IPv6 literal bracketed), the CA from the
// service-account mount, and the token asked for at every request (credentials.ts): the pod's is
// re-read from its file, since the kubelet rotates projected tokens in place. node:https and JSON, no client library: the agent makes a handful
// of requests in its life (docs/design.md counts them), and a client would cost start time and memory
// on every node for that. Loaded only when the API is used (cli.ts, the stop decision and the node
// controller import it lazily).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { request as plainRequest } from 'node:http';
import type { Config } from '../config.js';
import { serverUrl } from './kubeconfig.js';

/** An answer of the API server: the status and the body as parsed JSON (undefined if none or not JSON). */
export interface ApiAnswer<T = unknown> {
  status: number;
  body: T | undefined;
}

/** Raised when no answer came: refused, reset, timed out, TLS failed. */
export class ApiUnreachable extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'ApiUnreachable';
  }
}

export interface ApiClientOptions {
  server: string;
  /** The bearer token of each request; undefined: the request is not sent (ApiUnreachable 'ENOTOKEN'). */
  token: () => string | undefined;
  caFile: string | undefined;
  /** Every request ends after this long, answered or not. */
  timeoutMs: number;
}

const MAX_BODY = 4 << 20;

export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  /** In-cluster, as the pod sees it, with `token`; undefined outside Kubernetes (no token now, no service host). */
  static inCluster(config: Config, timeoutMs: number, token: () => string | undefined): ApiClient | undefined {
    const { host, port, protocol } = config.kubernetes;
    let hasToken: boolean;
    try {
      hasToken = token() !== undefined;
    } catch {
      hasToken = false;
    }
    if (host === undefined || !hasToken) return undefined;
    return new ApiClient({ server: serverUrl(protocol, host, port), token, caFile: config.skipTlsVerify ? undefined : config.caFile, timeoutMs });
  }

  get<T>(apiPath: string): Promise<ApiAnswer<T>> {
    return this.send<T>('GET', apiPath);
  }

  send<T>(method: string, apiPath: string, body?: unknown, contentType = 'application/json'): Promise<ApiAnswer<T>> {
    const url = new URL(apiPath, this.options.server);
    // Asked each time: a rotated token is in the file before the old one expires.
    let token: string | undefined;
    try {
      token = this.options.token();
    } catch (err) {
      return Promise.reject(new ApiUnreachable(`cannot read the token: ${(err as Error).message}`, (err as NodeJS.ErrnoException).code));
    }
    if (token === undefined) return Promise.reject(new ApiUnreachable('no token to send', 'ENOTOKEN'));
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'cni-chainer' };
    if (payload !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(payload.length);
    }
    const ca = this.options.caFile === undefined ? undefined : readFileSync(this.options.caFile);
    const send = url.protocol === 'https:' ? request : plainRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        url,
        { method, headers, ca, rejectUnauthorized: this.options.caFile !== undefined, timeout: this.options.timeoutMs, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY) req.destroy(new Error('answer too large'));
            else chunks.push(chunk);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: T | undefined;
            try {
              parsed = text === '' ? undefined : (JSON.parse(text) as T);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', (err) => reject(new ApiUnreachable(err.message, (err as NodeJS.ErrnoException).code)));
        },
      );
      // The socket's idle timeout, and a deadline for the whole exchange: a server that trickles
      // bytes must not hold a stop past its grace period either.
      const deadline = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${this.options.timeoutMs} ms`), { code: 'ETIMEDOUT' })), this.options.timeoutMs);
      req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${this.options.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', (err) => reject(new ApiUnreachable(err.message, (err as NodeJS.ErrnoException).code)));
      req.on('close', () => clearTimeout(deadline));
      req.end(payload);
    });
  }
}
