// The API server's own figures (its /metrics, Prometheus text): requests by verb and resource, request
// latency, long-running watches. Pure parsing and arithmetic over two scrapes.

export interface Scrape {
  /** apiserver_request_total summed by `VERB resource[/subresource]`. */
  requests: Map<string, number>;
  /** apiserver_request_duration_seconds buckets (every non-watch verb and resource), by upper bound. */
  buckets: Map<number, number>;
  /** Watches open now (apiserver_longrunning_requests, verb WATCH). */
  watches: number;
}

function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = m[2]!;
  return out;
}

export function parseScrape(text: string): Scrape {
  const scrape: Scrape = { requests: new Map(), buckets: new Map(), watches: 0 };
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const m = /^(\w+)(?:\{(.*)\})? ([^ ]+)/.exec(line);
    if (m === null) continue;
    const [, name, rawLabels, rawValue] = m;
    const value = Number(rawValue);
    const l = labels(rawLabels ?? '');
    if (name === 'apiserver_request_total') {
      const key = `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ''}`;
      scrape.requests.set(key, (scrape.requests.get(key) ?? 0) + value);
    } else if (name === 'apiserver_request_duration_seconds_bucket' && l.verb !== 'WATCH' && l.verb !== 'CONNECT') {
      const le = l.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(l.le);
      scrape.buckets.set(le, (scrape.buckets.get(le) ?? 0) + value);
    } else if (name === 'apiserver_longrunning_requests' && l.verb === 'WATCH') {
      scrape.watches += value;
    }
  }
  return scrape;
}

/** Requests between two scrapes, by `VERB resource` (the API server's counters restart with it: pass `from` undefined then). */
export function requestsBetween(from: Scrape | undefined, to: Scrape): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, value] of to.requests) {
    const delta = value - (from?.requests.get(key) ?? 0);
    if (delta > 0) out.set(key, delta);
  }
  return out;
}

/** The latency quantile `q` of the requests between two scrapes, from the histogram's buckets (upper bound of the bucket). */
export function latencyQuantile(from: Scrape | undefined, to: Scrape, q: number): number {
  const bounds = [...to.buckets.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => to.buckets.get(b)! - (from?.buckets.get(b) ?? 0));
  const total = counts.at(-1) ?? 0;
  if (total <= 0) return 0;
  const wanted = q * total;
  for (let i = 0; i < bounds.length; i++) if (counts[i]! >= wanted) return bounds[i]!;
  return Number.POSITIVE_INFINITY;
}

/** The sum of the requests whose key matches. */
export function total(requests: Map<string, number>, match: (key: string) => boolean = () => true): number {
  let sum = 0;
  for (const [key, value] of requests) if (match(key)) sum += value;
  return sum;
}
