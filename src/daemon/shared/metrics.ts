// What the agent counts, in plain numbers. Every event and every pass updates a few of these, and
// nothing here loads prom-client: the Prometheus exposition (prometheus.ts) is built at the first
// scrape of /metrics and reads these values at each scrape. prom-client and its default collectors
// cost ~4.5 MiB of RSS and ~9 ms of start (measured), which an agent nobody scrapes need not pay.

/** A monotonic count. */
export class Count {
  value = 0;

  inc(by = 1): void {
    this.value += by;
  }
}

/** Monotonic counts by the value of one label. */
export class CountBy {
  // A box per value, so that counting a value seen before is one lookup (every inotify event counts
  // one, about ten per file in a storm).
  private readonly counts = new Map<string, { value: number }>();

  constructor(readonly label: string) {}

  inc(labels: Readonly<Record<string, string>>, by = 1): void {
    this.add(labels[this.label] ?? '', by);
  }

  add(value: string, by = 1): void {
    const count = this.counts.get(value);
    if (count === undefined) this.counts.set(value, { value: by });
    else count.value += by;
  }

  /** Each label value counted so far, with its count. */
  *entries(): IterableIterator<[string, number]> {
    for (const [value, count] of this.counts) yield [value, count.value];
  }
}

/** A value that goes up and down. */
export class Level {
  value = 0;

  set(value: number): void {
    this.value = value;
  }
}

/** Observations counted into fixed buckets (each counted once, in the first bucket it fits). */
export class Timings {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(readonly buckets: readonly number[]) {
    this.counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    // A loop, not findIndex: its callback would be allocated for every patch of a storm.
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

export class Metrics {
  readonly events = new CountBy('kind');
  readonly patches = new Count();
  readonly unpatches = new Count();
  readonly staleWrites = new Count();
  readonly parseErrors = new Count();
  readonly writeErrors = new CountBy('code');
  readonly fights = new Count();
  readonly backoffs = new Count();
  readonly overflows = new Count();
  readonly resyncs = new CountBy('reason');
  readonly kubeconfigWrites = new Count();
  readonly patchLatency = new Timings([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1]);
  readonly ready = new Level();

  constructor(
    readonly version: string,
    readonly backend: string,
  ) {}

  countEvent(kind: string): void {
    this.events.add(kind);
  }
}
