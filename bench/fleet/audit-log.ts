// The agents' own requests, from the API server's audit log: apiserver_request_total counts every
// client (the controllers' relists, this bench's own calls), the audit log names the user. The policy
// records the agents' service account only (every agent runs as linkerd-cni:linkerd-cni, with its
// pod's token or its node's), at Metadata level, and each request once (omitStages RequestReceived:
// its ResponseComplete, or ResponseStarted for a watch). Each record's node comes from the token's
// own claims, which the API server puts in `user.extra` (authentication.kubernetes.io/node-name).
import { closeSync, openSync, readSync, statSync, writeFileSync } from 'node:fs';

export const AUDITED_GROUP = 'system:serviceaccounts:linkerd-cni';

export interface AgentRequest {
  /** When the API server received it, in ms since the epoch. */
  at: number;
  /** `VERB resource[/subresource]`, as apiserver_request_total names it (create is POST). */
  key: string;
  node: string;
  code: number;
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  objectRef?: { resource?: string; subresource?: string };
  user?: { extra?: Record<string, string[]> };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
}

const VERBS: Record<string, string> = { get: 'GET', list: 'LIST', watch: 'WATCH', create: 'POST', update: 'PUT', patch: 'PATCH', delete: 'DELETE', deletecollection: 'DELETE' };

/** Writes the policy; the API server's flags that use it. */
export function auditFlags(policyFile: string, logFile: string): string[] {
  writeFileSync(
    policyFile,
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      omitStages: ['RequestReceived'],
      rules: [{ level: 'Metadata', userGroups: [AUDITED_GROUP] }, { level: 'None' }],
    }),
  );
  // The log backend's default mode is blocking: a record is on disk before its response is sent.
  return ['--audit-policy-file', policyFile, '--audit-log-path', logFile, '--audit-log-maxsize', '0', '--audit-log-maxbackup', '0'];
}

export class AuditLog {
  constructor(private readonly file: string) {}

  /** Where the log ends now: pass it to `since` later. */
  mark(): number {
    try {
      return statSync(this.file).size;
    } catch {
      return 0;
    }
  }

  /** The agents' requests recorded after `mark`. */
  since(mark: number): AgentRequest[] {
    const end = this.mark();
    if (end <= mark) return [];
    const buffer = Buffer.alloc(end - mark);
    const fd = openSync(this.file, 'r');
    try {
      readSync(fd, buffer, 0, buffer.length, mark);
    } finally {
      closeSync(fd);
    }
    const out: AgentRequest[] = [];
    for (const line of buffer.toString('utf8').split('\n')) {
      if (line === '') continue;
      const event = JSON.parse(line) as AuditEvent;
      const complete = event.stage === 'ResponseComplete' && event.verb !== 'watch';
      const watchStarted = event.stage === 'ResponseStarted' && event.verb === 'watch';
      if (!complete && !watchStarted) continue;
      const ref = event.objectRef ?? {};
      out.push({
        at: Date.parse(event.requestReceivedTimestamp ?? ''),
        key: `${VERBS[event.verb ?? ''] ?? event.verb} ${ref.resource ?? ''}${ref.subresource ? `/${ref.subresource}` : ''}`,
        node: event.user?.extra?.['authentication.kubernetes.io/node-name']?.[0] ?? '',
        code: event.responseStatus?.code ?? 0,
      });
    }
    return out;
  }
}

/** The requests by key, sorted by key. */
export function byKey(requests: AgentRequest[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Requests per node: the mean over `nodes`, and the most any node made. */
export function perNode(requests: AgentRequest[], nodes: number): { mean: number; max: number } {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(r.node, (counts.get(r.node) ?? 0) + 1);
  return { mean: requests.length / nodes, max: Math.max(0, ...counts.values()) };
}

/** The answers that were not 2xx, by `code VERB resource`. */
export function failures(requests: AgentRequest[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of requests) {
    if (r.code >= 200 && r.code < 300) continue;
    const key = `${r.code} ${r.key}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Requests received in each second from `from` (ms since the epoch), for `seconds` seconds. */
export function perSecond(requests: AgentRequest[], from: number, seconds: number): number[] {
  const out = new Array<number>(seconds).fill(0);
  for (const r of requests) {
    const s = Math.floor((r.at - from) / 1000);
    if (s >= 0 && s < seconds) out[s]!++;
  }
  return out;
}
