// The exposition built at the first scrape reads the plain counts at every scrape: counters, labelled
// counters, the gauge and the histogram (cumulative buckets, +Inf, sum, count), in Prometheus' text
// format as prom-client renders it.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { prometheusRegistry } from '../../src/daemon/http/prometheus.js';

describe('prometheus exposition', () => {
  it('renders every count as it is at the scrape', async () => {
    const m = new Metrics('1.2.3', 'native');
    const registry = prometheusRegistry(m);
    m.patches.inc();
    m.patches.inc(2);
    m.countEvent('moved-in');
    m.countEvent('moved-in');
    m.countEvent('create');
    m.writeErrors.inc({ code: 'ENOSPC' });
    m.ready.set(1);
    for (const seconds of [0.00005, 0.0003, 0.0003, 0.002, 7]) m.patchLatency.observe(seconds);
    let text = await registry.metrics();
    expect(text).toMatch(/^cni_chainer_patches_total 3$/m);
    expect(text).toMatch(/^cni_chainer_events_total\{kind="moved-in"\} 2$/m);
    expect(text).toMatch(/^cni_chainer_events_total\{kind="create"\} 1$/m);
    expect(text).toMatch(/^cni_chainer_write_errors_total\{code="ENOSPC"\} 1$/m);
    expect(text).toMatch(/^cni_chainer_ready 1$/m);
    expect(text).toMatch(/^# TYPE cni_chainer_patch_latency_seconds histogram$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="0.0001"\} 1$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="0.00025"\} 1$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="0.0005"\} 3$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="0.0025"\} 4$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="1"\} 4$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_bucket\{le="\+Inf"\} 5$/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_sum 7.00265/m);
    expect(text).toMatch(/^cni_chainer_patch_latency_seconds_count 5$/m);
    expect(text).toMatch(/^cni_chainer_build_info\{version="1.2.3",backend="native",node="v\d+/m);
    expect(text).toMatch(/^cni_chainer_process_resident_memory_bytes \d+/m);
    // The next scrape sees what changed since, once.
    m.patches.inc();
    m.ready.set(0);
    text = await registry.metrics();
    expect(text).toMatch(/^cni_chainer_patches_total 4$/m);
    expect(text).toMatch(/^cni_chainer_ready 0$/m);
  });
});
