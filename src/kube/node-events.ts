// Events on the agent's Node (docs/design.md, Kubernetes), so that `kubectl describe node` and
// `kubectl events --for node/<name>` say what the chain is doing: events.k8s.io/v1, reportingController
// cni-chainer, in `default` as the kubelet's. One Event per key (a cause that stays the same: the
// caller's, node-event-table.ts); repeats update that Event's series (count and last time) at most once
// per SERIES_UPDATE_MS, and a node makes at most MAX_NEW_PER_WINDOW new Events per window: a fight that
// lasts an hour writes a handful of Events, not thousands, and an idle node writes none.
//
// Time here is monotonic: a wall clock stepped back a day must not silence the node for a day. A key
// not seen for a window is forgotten, so the memory kept is bounded by what a window can bring. A
// create that fails (the API server down) is tried again a few times, with jitter: 5,000 nodes whose
// API server comes back must not all post in the same second.
import type { Logger } from '../log.js';
import { monotonicMs } from '../monotonic-ms.js';
import { randomUuid } from '../random-uuid.js';
import type { ApiClient } from './api-client.js';
import { jittered } from './jitter.js';

export type NodeEventReason = 'Chained' | 'Unchained' | 'Fight' | 'BinaryMissing' | 'StaleOwnedCopy' | 'Uninstall';

const REPORTING_CONTROLLER = 'cni-chainer';
// Node events live in `default`, as the kubelet's do.
const NAMESPACE = 'default';
const SERIES_UPDATE_MS = 30_000;
const WINDOW_MS = 10 * 60_000;
const MAX_NEW_PER_WINDOW = 10;
// events.k8s.io/v1 refuses a note over 1 KiB (bytes, not characters).
const MAX_NOTE_BYTES = 1024;
const ELLIPSIS = '…';
// A create that failed (no answer, 5xx, 429) is tried again at 2 s doubling to 10 s, jittered ±50%,
// 12 attempts in all: ~95 s, about as long as client-go's event recorder keeps an Event (12 tries,
// 10 s apart). With 4 attempts (~14 s) every Chained Event of a start during the fleet bench's 60 s
// API server outage was lost (docs/performance.md, Fleet).
const CREATE_ATTEMPTS = 12;
const FIRST_RETRY_MS = 2_000;
const MAX_RETRY_MS = 10_000;

/** `note` cut to at most `max` UTF-8 bytes, an ellipsis included, never inside a character. */
export function truncateUtf8(note: string, max = MAX_NOTE_BYTES): string {
  if (Buffer.byteLength(note) <= max) return note;
  const room = max - Buffer.byteLength(ELLIPSIS);
  let out = '';
  let bytes = 0;
  for (const char of note) {
    const size = Buffer.byteLength(char);
    if (bytes + size > room) break;
    out += char;
    bytes += size;
  }
  return out + ELLIPSIS;
}

interface Series {
  name: string | undefined;
  /** The POST that creates the Event: the series is written after it. */
  created: Promise<void>;
  count: number;
  sentCount: number;
  /** Wall time of the last occurrence (the Event's lastObservedTime), and its monotonic time. */
  lastObserved: string;
  lastSeenMs: number;
  timer: NodeJS.Timeout | undefined;
}

export class NodeEvents {
  private readonly series = new Map<string, Series>();
  private windowStart = Number.NEGATIVE_INFINITY;
  private newInWindow = 0;
  private pending: Array<Promise<void>> = [];
  private disposed = false;

  constructor(
    private readonly client: ApiClient,
    private readonly nodeName: string,
    private readonly instance: string,
    private readonly log: Logger,
    /** Monotonic milliseconds (a test moves it). */
    private readonly nowMs: () => number = monotonicMs,
    /** How long repeats gather before the series is written (a test shortens it). */
    private readonly seriesUpdateMs = SERIES_UPDATE_MS,
    /** Wall time, for the Event's timestamps only. */
    private readonly wallNow: () => number = Date.now,
  ) {}

  /** An occurrence of the cause `key`: a new Event, or one more in its series. */
  record(reason: NodeEventReason, key: string, note: string, type: 'Normal' | 'Warning'): void {
    const now = this.nowMs();
    this.prune(now);
    const id = `${reason}\n${key}`;
    const at = new Date(this.wallNow()).toISOString();
    const known = this.series.get(id);
    if (known !== undefined) {
      known.count++;
      known.lastObserved = at;
      known.lastSeenMs = now;
      if (known.timer === undefined) {
        // The series is brought up to date later, once, whatever comes meanwhile.
        known.timer = setTimeout(() => this.track(this.updateSeries(known)), this.seriesUpdateMs);
        known.timer.unref();
      }
      return;
    }
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.newInWindow = 0;
    }
    if (this.newInWindow >= MAX_NEW_PER_WINDOW) return;
    this.newInWindow++;
    const series: Series = { name: undefined, created: Promise.resolve(), count: 1, sentCount: 1, lastObserved: at, lastSeenMs: now, timer: undefined };
    this.series.set(id, series);
    series.created = this.create(series, reason, truncateUtf8(note), type, at);
    this.track(series.created);
  }

  /** How many causes are remembered (bounded by what one window brings). */
  get remembered(): number {
    return this.series.size;
  }

  /** Waits for what is under way (at stop, within its deadline). */
  async flush(): Promise<void> {
    await Promise.all(this.pending);
  }

  dispose(): void {
    this.disposed = true;
    for (const s of this.series.values()) clearTimeout(s.timer);
  }

  /** Causes not seen for a window are forgotten: their next occurrence is a new Event. */
  private prune(now: number): void {
    for (const [id, s] of this.series) {
      if (now - s.lastSeenMs >= WINDOW_MS && s.timer === undefined) this.series.delete(id);
    }
  }

  private track(work: Promise<void>): void {
    const settled = work.catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'cannot write an event on the node'));
    this.pending.push(settled);
    void settled.then(() => (this.pending = this.pending.filter((p) => p !== settled)));
  }

  private async create(series: Series, reason: NodeEventReason, note: string, type: string, at: string): Promise<void> {
    const event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // `<node>.<16 hex>`, as the kubelet names its node events (a generateName may not end in '.').
      metadata: { name: `${this.nodeName}.${randomUuid().replace(/-/g, '').slice(0, 16)}`, namespace: NAMESPACE },
      eventTime: at.replace(/Z$/, '000Z'),
      reportingController: REPORTING_CONTROLLER,
      reportingInstance: this.instance,
      action: reason,
      reason,
      regarding: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
      note,
      type,
    };
    let retryMs = FIRST_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      try {
        const answer = await this.client.send<{ metadata?: { name?: string }; message?: string }>('POST', `/apis/events.k8s.io/v1/namespaces/${NAMESPACE}/events`, event);
        if (answer.status === 201) {
          series.name = answer.body?.metadata?.name;
          return;
        }
        // A create that timed out (504) may have been stored all the same: its retry, under the same
        // name, is then refused as AlreadyExists. The Event is there.
        if (answer.status === 409 && attempt > 1) {
          series.name = event.metadata.name;
          return;
        }
        failure = `POST event answered ${answer.status}: ${answer.body?.message ?? ''}`;
        // Refused for what it is (403, 422): trying again changes nothing.
        if (answer.status < 500 && answer.status !== 429) throw new Error(failure);
      } catch (err) {
        if ((err as Error).message.startsWith('POST event answered')) throw err;
        failure = (err as Error).message;
      }
      if (attempt >= CREATE_ATTEMPTS || this.disposed) throw new Error(failure);
      await new Promise((resolve) => setTimeout(resolve, jittered(retryMs, 0.5)).unref());
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    }
  }

  private async updateSeries(series: Series): Promise<void> {
    series.timer = undefined;
    await series.created.catch(() => {});
    if (series.name === undefined || series.count === series.sentCount) return;
    const patch = { series: { count: series.count, lastObservedTime: series.lastObserved.replace(/Z$/, '000Z') } };
    const answer = await this.client.send('PATCH', `/apis/events.k8s.io/v1/namespaces/${NAMESPACE}/events/${encodeURIComponent(series.name)}`, patch, 'application/merge-patch+json');
    if (answer.status !== 200) throw new Error(`PATCH event answered ${answer.status}`);
    series.sentCount = series.count;
  }
}
