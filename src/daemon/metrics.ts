// Prometheus metrics (prom-client), one registry per daemon so tests can run several in a process.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly events = new Counter({ name: 'cni_chainer_events_total', help: 'Watch events received, by kind', labelNames: ['kind'], registers: [this.registry] });
  readonly patches = new Counter({ name: 'cni_chainer_patches_total', help: 'Config files written to chain the plugin', registers: [this.registry] });
  readonly unpatches = new Counter({ name: 'cni_chainer_unpatches_total', help: 'Config files written to remove the plugin', registers: [this.registry] });
  readonly staleWrites = new Counter({ name: 'cni_chainer_stale_writes_total', help: 'Patches dropped because a newer write landed first (redone)', registers: [this.registry] });
  readonly parseErrors = new Counter({ name: 'cni_chainer_parse_errors_total', help: 'Config contents that are not a valid CNI config', registers: [this.registry] });
  readonly writeErrors = new Counter({ name: 'cni_chainer_write_errors_total', help: 'Failed writes, by errno code', labelNames: ['code'], registers: [this.registry] });
  readonly fights = new Counter({ name: 'cni_chainer_fights_total', help: 'Files where another writer kept reverting the patch', registers: [this.registry] });
  readonly backoffs = new Counter({ name: 'cni_chainer_backoffs_total', help: 'Patches delayed by the fight backoff', registers: [this.registry] });
  readonly overflows = new Counter({ name: 'cni_chainer_overflows_total', help: 'Kernel event-queue overflows (each causes a full rescan)', registers: [this.registry] });
  readonly resyncs = new Counter({ name: 'cni_chainer_resyncs_total', help: 'Full rescans of the config directory', labelNames: ['reason'], registers: [this.registry] });
  readonly kubeconfigWrites = new Counter({ name: 'cni_chainer_kubeconfig_writes_total', help: 'Kubeconfig files written', registers: [this.registry] });
  readonly patchLatency = new Histogram({
    name: 'cni_chainer_patch_latency_seconds',
    help: 'From reading the event to the patched file landing (rename done)',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });
  readonly ready = new Gauge({ name: 'cni_chainer_ready', help: '1 when every current config is chained', registers: [this.registry] });
  readonly buildInfo = new Gauge({ name: 'cni_chainer_build_info', help: 'Build information', labelNames: ['version', 'backend', 'node'], registers: [this.registry] });

  // Bound children per kind: a storm brings more than ten events per file, and resolving the label
  // object on each one is measurable.
  private readonly eventCounters = new Map<string, { inc(): void }>();

  countEvent(kind: string): void {
    let counter = this.eventCounters.get(kind);
    if (counter === undefined) {
      counter = this.events.labels(kind);
      this.eventCounters.set(kind, counter);
    }
    counter.inc();
  }

  constructor(version: string, backend: string) {
    this.buildInfo.set({ version, backend, node: process.version }, 1);
    // The event-loop-lag sampler would otherwise wake the process every 10 ms: idle CPU must stay ~0.
    collectDefaultMetrics({ register: this.registry, prefix: 'cni_chainer_', eventLoopMonitoringPrecision: 1000 });
  }
}
