// What kubelet does with the translated pod (pod-spec.ts) on a private containerd: run the sandbox and
// the container, probe it over HTTP on the pod's network (the host network of a hostNetwork pod is
// containerd's own network namespace here), run the preStop hook before the stop signal within the
// grace period, and read the container's memory cgroup as kubelet's working set does.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { PrivateContainerd } from '../runtime/containerd.js';
import type { HttpProbe, TranslatedPod } from './pod-spec.js';

export interface Memory {
  /** memory.usage_in_bytes (v1) or memory.current (v2). */
  usage: number;
  anon: number;
  file: number;
  /** usage minus inactive file pages: what kubelet evicts and OOM-ranks by. */
  workingSet: number;
  limit: number;
}

/** Pods started and not stopped yet: a failed test leaves none behind for the next (stopAll). */
const running = new Set<RunningPod>();

export class RunningPod {
  /** Stops every pod a test left running (its assertions failed before its own stop). */
  static async stopAll(): Promise<void> {
    for (const pod of [...running]) await pod.stop().catch(() => {});
  }

  private constructor(
    private readonly runtime: PrivateContainerd,
    readonly pod: TranslatedPod,
    readonly sandboxId: string,
    readonly containerId: string,
    /** When the container's process was exec'd (ms since the epoch). */
    readonly startedAt: number,
  ) {}

  static async start(runtime: PrivateContainerd, pod: TranslatedPod): Promise<RunningPod> {
    const sandboxId = await runtime.cri.runSandbox(pod.sandbox);
    const containerId = await runtime.cri.createContainer(sandboxId, pod.container, pod.sandbox);
    await runtime.cri.startContainer(containerId);
    // When the container's process was exec'd, as the runtime recorded it (ns since the epoch).
    const startedAt = Number(BigInt((await runtime.cri.containerStatus(containerId)).started_at) / 1_000_000n);
    const started = new RunningPod(runtime, pod, sandboxId, containerId, startedAt);
    running.add(started);
    return started;
  }

  /** An HTTP GET from the pod's network namespace (kubelet's probe); status and body, or undefined. */
  probe(probe: HttpProbe): { status: number; body: string } | undefined {
    const script = `fetch('http://127.0.0.1:${probe.port}${probe.path}', { signal: AbortSignal.timeout(1000) }).then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })), () => console.log('null'))`;
    const result = spawnSync('nsenter', [`--net=/proc/${this.runtime.pid}/ns/net`, '--', process.execPath, '-e', script], { encoding: 'utf8', timeout: 10_000 });
    return (JSON.parse(result.stdout.trim() || 'null') as { status: number; body: string } | null) ?? undefined;
  }

  async waitReady(timeoutMs = 30_000): Promise<void> {
    const readiness = this.pod.readiness!;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.probe(readiness);
      if (r?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs} ms: ${JSON.stringify(r)}\n${this.logs().slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The container's log as the runtime kept it (CRI log format: time, stream, tag, line). */
  logs(): string {
    const file = path.join((this.pod.sandbox as { log_directory: string }).log_directory, (this.pod.container as { log_path: string }).log_path);
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  /** The agent's JSON log lines. */
  logLines(): Array<Record<string, unknown>> {
    return this.logs()
      .split('\n')
      .map((line) => line.split(' ').slice(3).join(' '))
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** kubelet's stop: the preStop hook (within the grace period), then the stop signal, then SIGKILL. */
  async stop(): Promise<{ exitCode: number; tookMs: number; preStopExit: number | undefined }> {
    running.delete(this);
    const began = Date.now();
    let preStopExit: number | undefined;
    if (this.pod.preStop !== undefined) preStopExit = (await this.runtime.cri.execSync(this.containerId, this.pod.preStop, this.pod.gracePeriodS)).exitCode;
    const left = Math.max(2, this.pod.gracePeriodS - Math.floor((Date.now() - began) / 1000));
    await this.runtime.cri.stopContainer(this.containerId, left);
    const status = await this.runtime.cri.containerStatus(this.containerId);
    const tookMs = Date.now() - began;
    await this.runtime.cri.removeContainer(this.containerId);
    await this.runtime.cri.removePodSandbox(this.sandboxId);
    return { exitCode: status.exit_code, tookMs, preStopExit };
  }

  /** The container's memory cgroup (v1 here; v2 names where the machine has v2). */
  memory(): Memory {
    const v1 = path.join('/sys/fs/cgroup/memory', this.runtime.cgroupParent, this.containerId);
    const v2 = path.join('/sys/fs/cgroup', this.runtime.cgroupParent, this.containerId);
    const dir = existsSync(v1) ? v1 : v2;
    const stat = Object.fromEntries(
      readFileSync(path.join(dir, 'memory.stat'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string])
        .map(([k, v]) => [k, Number(v)]),
    );
    if (dir === v1) {
      const usage = Number(readFileSync(path.join(dir, 'memory.usage_in_bytes'), 'utf8'));
      return { usage, anon: stat.total_rss ?? stat.rss ?? 0, file: stat.total_cache ?? stat.cache ?? 0, workingSet: Math.max(0, usage - (stat.total_inactive_file ?? 0)), limit: Number(readFileSync(path.join(dir, 'memory.limit_in_bytes'), 'utf8')) };
    }
    const usage = Number(readFileSync(path.join(dir, 'memory.current'), 'utf8'));
    const max = readFileSync(path.join(dir, 'memory.max'), 'utf8').trim();
    return { usage, anon: stat.anon ?? 0, file: stat.file ?? 0, workingSet: Math.max(0, usage - (stat.inactive_file ?? 0)), limit: max === 'max' ? Infinity : Number(max) };
  }
}
