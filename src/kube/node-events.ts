// Events on the agent's Node (docs/design.md, Kubernetes), so that `kubectl describe node` and
// `kubectl events --for node/<name>` say what the chain is doing: events.k8s.io/v1, reportingController
// cni-chainer. One Event per reason and note; repeats of it update that Event's series (count and
// last time) instead of creating more, at most once per SERIES_UPDATE_MS, and a node makes at most
// MAX_NEW_PER_WINDOW new Events per window: a fight that lasts an hour writes a handful of Events,
// not thousands, and an idle node writes none.
import type { Logger } from '../log.js';
import { randomUuid } from '../random-uuid.js';
import type { ApiClient } from './api-client.js';

export type NodeEventReason = 'Chained' | 'Unchained' | 'Fight' | 'BinaryMissing' | 'StaleOwnedCopy' | 'Uninstall';

const REPORTING_CONTROLLER = 'cni-chainer';
// Node events live in `default`, as the kubelet's do.
const NAMESPACE = 'default';
const SERIES_UPDATE_MS = 30_000;
const WINDOW_MS = 10 * 60_000;
const MAX_NEW_PER_WINDOW = 10;
const MAX_NOTE = 1024;

interface Series {
  name: string | undefined;
  /** The POST that creates the Event: the series is written after it. */
  created: Promise<void>;
  count: number;
  sentCount: number;
  lastObserved: string;
  timer: NodeJS.Timeout | undefined;
}

export class NodeEvents {
  private readonly series = new Map<string, Series>();
  private windowStart = 0;
  private newInWindow = 0;
  private pending: Array<Promise<void>> = [];

  constructor(
    private readonly client: ApiClient,
    private readonly nodeName: string,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
    /** How long repeats gather before the series is written (a test shortens it). */
    private readonly seriesUpdateMs = SERIES_UPDATE_MS,
  ) {}

  record(reason: NodeEventReason, note: string, type: 'Normal' | 'Warning'): void {
    const text = note.length > MAX_NOTE ? `${note.slice(0, MAX_NOTE - 1)}…` : note;
    const key = `${reason}\n${text}`;
    const at = new Date(this.now()).toISOString();
    const known = this.series.get(key);
    if (known !== undefined) {
      known.count++;
      known.lastObserved = at;
      if (known.timer === undefined) {
        // The series is brought up to date later, once, whatever comes meanwhile.
        known.timer = setTimeout(() => this.track(this.updateSeries(known)), this.seriesUpdateMs);
        known.timer.unref();
      }
      return;
    }
    if (this.now() - this.windowStart > WINDOW_MS) {
      this.windowStart = this.now();
      this.newInWindow = 0;
    }
    if (this.newInWindow >= MAX_NEW_PER_WINDOW) return;
    this.newInWindow++;
    const series: Series = { name: undefined, created: Promise.resolve(), count: 1, sentCount: 1, lastObserved: at, timer: undefined };
    this.series.set(key, series);
    series.created = this.create(series, reason, text, type, at);
    this.track(series.created);
  }

  /** Waits for what is under way (at stop, within its deadline). */
  async flush(): Promise<void> {
    await Promise.all(this.pending);
  }

  dispose(): void {
    for (const s of this.series.values()) clearTimeout(s.timer);
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
    const answer = await this.client.send<{ metadata?: { name?: string }; message?: string }>('POST', `/apis/events.k8s.io/v1/namespaces/${NAMESPACE}/events`, event);
    if (answer.status !== 201) throw new Error(`POST event answered ${answer.status}: ${answer.body?.message ?? ''}`);
    series.name = answer.body?.metadata?.name;
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
