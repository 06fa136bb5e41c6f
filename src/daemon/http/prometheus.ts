// The Prometheus exposition of the agent's metrics (metrics.ts), built with prom-client when /metrics
// is first scraped (the health server imports this module then). Each metric reads its current value
// from the plain counts at every scrape; prom-client's default collectors add the process metrics.
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { Count, CountBy, Metrics, Timings } from '../shared/metrics.js';

function counter(registry: Registry, name: string, help: string, count: Count): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(count.value);
    },
  });
}

function counterBy(registry: Registry, name: string, help: string, counts: CountBy): void {
  new Counter({
    name,
    help,
    labelNames: [counts.label],
    registers: [registry],
    collect() {
      this.reset();
      for (const [value, n] of counts.entries()) this.inc({ [counts.label]: value }, n);
    },
  });
}

/**
 * A histogram read from Timings. prom-client's Histogram counts observations itself and cannot be
 * given counts, so this is a metric in the shape Registry renders (its public registerMetric and the
 * `get()` every prom-client metric has): cumulative `_bucket` lines, `_sum` and `_count`.
 */
function histogram(registry: Registry, name: string, help: string, timings: Timings): void {
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => {
      let cumulative = 0;
      const buckets = timings.buckets.map((le, i) => {
        cumulative += timings.counts[i]!;
        return { metricName: `${name}_bucket`, labels: { le }, value: cumulative };
      });
      return {
        name,
        help,
        type: 'histogram',
        aggregator: 'sum',
        values: [
          ...buckets,
          { metricName: `${name}_bucket`, labels: { le: '+Inf' }, value: timings.count },
          { metricName: `${name}_sum`, labels: {}, value: timings.sum },
          { metricName: `${name}_count`, labels: {}, value: timings.count },
        ],
      };
    },
  };
  registry.registerMetric(metric as unknown as Metric);
}

export function prometheusRegistry(m: Metrics): Registry {
  const registry = new Registry();
  const counts: Array<[string, string, Count]> = [
    ['cni_chainer_patches_total', 'Config files written to chain the plugin', m.patches],
    ['cni_chainer_unpatches_total', 'Config files written to remove the plugin', m.unpatches],
    ['cni_chainer_stale_writes_total', 'Patches dropped because a newer write landed first (redone)', m.staleWrites],
    ['cni_chainer_parse_errors_total', 'Config contents that are not a valid CNI config', m.parseErrors],
    ['cni_chainer_fights_total', 'Files where another writer kept reverting the patch', m.fights],
    ['cni_chainer_backoffs_total', 'Patches delayed by the fight backoff', m.backoffs],
    ['cni_chainer_overflows_total', 'Kernel event-queue overflows (each causes a full rescan)', m.overflows],
    ['cni_chainer_kubeconfig_writes_total', 'Kubeconfig files written', m.kubeconfigWrites],
  ];
  for (const [name, help, count] of counts) counter(registry, name, help, count);
  const countsBy: Array<[string, string, CountBy]> = [
    ['cni_chainer_events_total', 'Watch events received, by kind', m.events],
    ['cni_chainer_write_errors_total', 'Failed writes, by errno code', m.writeErrors],
    ['cni_chainer_resyncs_total', 'Full rescans of the config directory', m.resyncs],
  ];
  for (const [name, help, count] of countsBy) counterBy(registry, name, help, count);
  histogram(registry, 'cni_chainer_patch_latency_seconds', 'From reading the event to the patched file landing (rename done)', m.patchLatency);
  new Gauge({
    name: 'cni_chainer_ready',
    help: '1 when every current config is chained',
    registers: [registry],
    collect() {
      this.set(m.ready.value);
    },
  });
  new Gauge({ name: 'cni_chainer_build_info', help: 'Build information', labelNames: ['version', 'backend', 'node'], registers: [registry] }).set(
    { version: m.version, backend: m.backend, node: process.version },
    1,
  );
  // The event-loop-lag sampler would otherwise wake the process every 10 ms: idle CPU must stay ~0.
  collectDefaultMetrics({ register: registry, prefix: 'cni_chainer_', eventLoopMonitoringPrecision: 1000 });
  return registry;
}
