// A scratch node for integration tests: a host root with net.d and the bin dir, a container bin dir
// with a fake plugin binary, a service-account dir, and the real CLI run against it as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import type { JsonObject } from '../../src/cni/json.js';
import { freePort } from '../../bench/free-port.js';
import { cliFile } from './addon-path.js';
import { expectedPlugin, fixture, pluginFile } from './fixtures.js';
import { runProcess, type Finished } from './run-node.js';
import { tempDir } from './tmp.js';
import { Inbox, waitFor } from './wait.js';

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

/**
 * The steps of a stop, as its lines tell the operator why the node was kept or uninstalled (the
 * process is gone after them: its log is the account). One table here, so that no test matches the text.
 */
export type StopStep = 'taken-over' | 'kept-chained' | 'uninstalling' | 'kept-binaries' | 'unchain-failed';
const STOP_LINES: Record<string, StopStep> = {
  'another instance took this node over while the stop was decided: leaving its configuration in place': 'taken-over', // stop.ts
  'stopping without unchaining: the node stays chained': 'kept-chained', // stop.ts
  'uninstalling: removing the plugin from every config': 'uninstalling', // stop.ts
  'keeping the plugin binaries and the kubeconfig': 'kept-binaries', // teardown.ts
  'stopped, but the plugin is still in these configs: binaries and kubeconfig kept': 'unchain-failed', // cli.ts
};
export interface StopAccount {
  step: StopStep;
  reason?: string;
  files?: string[];
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

export class DaemonProcess {
  readonly logs = new Inbox<LogLine>();
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /** `port`: its HEALTH_PORT, when it serves probes. */
  constructor(
    readonly child: ChildProcess,
    readonly port?: number,
  ) {
    running.add(child);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') this.logs.push(JSON.parse(line) as LogLine);
    });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) =>
      child.on('close', (code, signal) => {
        running.delete(child);
        resolve({ code, signal });
      }),
    );
  }

  waitLog(match: string | ((line: LogLine) => boolean), timeoutMs?: number): Promise<LogLine> {
    const test = typeof match === 'string' ? (l: LogLine) => l.msg === match : match;
    return this.logs.until(test, `log line ${String(match)}`, timeoutMs);
  }

  /** The steps its stop took, in order (StopStep). */
  stopSteps(): StopAccount[] {
    return this.logs.items.flatMap((l) => {
      const step = STOP_LINES[String(l.msg)];
      return step === undefined ? [] : [{ step, reason: l.reason as string | undefined, files: l.files as string[] | undefined }];
    });
  }

  /** Why its stop took `step`, or undefined if it did not. */
  stopReason(step: StopStep): string | undefined {
    return this.stopSteps().find((s) => s.step === step)?.reason;
  }

  count(msg: string): number {
    return this.logs.items.filter((l) => l.msg === msg).length;
  }

  /**
   * Waits until this instance has stood down for a newer one: alive, and its probes' port let go
   * (health-port.ts), which is what the kubelet sees of it. Needs a HEALTH_PORT of its own.
   */
  async stoodDown(timeoutMs?: number): Promise<void> {
    const port = this.probesPort();
    await waitFor(async () => (await readyzStatus(port)) === 0 && this.child.exitCode === null, `the instance on port ${port} standing down`, timeoutMs);
  }

  /** Waits until this instance answers /readyz 200: it owns the node and every config is chained. */
  async ready(timeoutMs?: number): Promise<void> {
    const port = this.probesPort();
    await waitFor(async () => (await readyzStatus(port)) === 200, `the instance on port ${port} ready`, timeoutMs);
  }

  private probesPort(): number {
    if (this.port === undefined) throw new Error('this instance serves no probes: start it with a HEALTH_PORT');
    return this.port;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    this.child.kill(signal);
    return this.exited;
  }
}

export { freePort };

/** GET from the daemon's health server. */
export async function probe(port: number, what: '/healthz' | '/readyz' | '/metrics'): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${what}`);
  return { status: res.status, body: await res.text() };
}

/**
 * Waits until the daemon's /readyz lists config `file` with `status` (a line "- file: status (detail)",
 * as operators read it), and returns that line.
 */
export async function readyzLists(port: number, file: string, status: string, timeoutMs = 10_000): Promise<string> {
  return waitFor(async () => (await probe(port, '/readyz')).body.split('\n').find((l) => l.startsWith(`- ${file}: ${status}`)), `/readyz listing ${file}: ${status}`, timeoutMs);
}

/** A sample without labels from the daemon's /metrics, e.g. `cni_chainer_patches_total`. */
export async function metric(port: number, name: string): Promise<number> {
  const { body } = await probe(port, '/metrics');
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no sample ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

/** The sum of a metric's samples over all its labels (0 while it has none), e.g. `cni_chainer_resyncs_total`. */
export async function metricSum(port: number, name: string): Promise<number> {
  const { body } = await probe(port, '/metrics');
  return body
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Waits until the sum of a metric's samples reaches `atLeast`, and returns it. */
export async function untilMetric(port: number, name: string, atLeast: number, timeoutMs = 10_000): Promise<number> {
  return waitFor(async () => {
    const value = await metricSum(port, name);
    return value >= atLeast && value;
  }, `${name} >= ${atLeast}`, timeoutMs);
}

/** The status /readyz answers, or 0 while nothing listens on the port (the daemon starting, or a hand-over). */
export async function readyzStatus(port: number): Promise<number> {
  return (await probe(port, '/readyz').catch(() => ({ status: 0 }))).status;
}

export class NodeHost {
  readonly root: string;
  readonly netDir: string;
  readonly binDir: string;
  readonly hostRoot: string;
  readonly containerBin: string;
  readonly saDir: string;
  readonly plugin: JsonObject = expectedPlugin();

  /** `root`: a directory the caller owns (a suite's beforeAll); by default one removed after the test. */
  constructor(options: { netDir?: boolean; token?: string | false; root?: string } = {}) {
    this.root = options.root ?? tempDir('cni-chainer-node-');
    this.netDir = path.join(this.root, 'host', 'etc', 'cni', 'net.d');
    this.binDir = path.join(this.root, 'host', 'opt', 'cni', 'bin');
    this.hostRoot = path.join(this.root, 'host');
    this.containerBin = path.join(this.root, 'container-bin');
    this.saDir = path.join(this.root, 'serviceaccount');
    if (options.netDir !== false) mkdirSync(this.netDir, { recursive: true });
    mkdirSync(this.hostRoot, { recursive: true });
    mkdirSync(this.containerBin);
    writeFileSync(path.join(this.containerBin, 'linkerd-cni'), '#!/bin/sh\necho linkerd-cni\n');
    chmodSync(path.join(this.containerBin, 'linkerd-cni'), 0o755);
    mkdirSync(this.saDir);
    if (options.token !== false) {
      writeFileSync(path.join(this.saDir, 'token'), options.token ?? 'token-1');
      writeFileSync(path.join(this.saDir, 'ca.crt'), 'CA');
    }
  }

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      CONTAINER_MOUNT_PREFIX: this.hostRoot,
      CONTAINER_CNI_BIN_DIR: this.containerBin,
      SERVICEACCOUNT_PATH: this.saDir,
      KUBERNETES_SERVICE_HOST: '10.96.0.1',
      KUBERNETES_SERVICE_PORT: '443',
      CNI_NETWORK_CONFIG_FILE: pluginFile,
      HEALTH_PORT: '0',
      RESYNC_INTERVAL_S: '0',
      LOG_LEVEL: 'debug',
      ...extra,
    };
  }

  /** The path of a net.d entry on disk. */
  net(name: string): string {
    return path.join(this.netDir, name);
  }

  /** Host path → disk path. */
  disk(hostPath: string): string {
    return path.join(this.hostRoot, hostPath);
  }

  /** Writes like a primary CNI: a temp file, then rename into place. */
  put(file: string, text: string): void {
    const target = path.isAbsolute(file) ? file : this.net(file);
    const tmp = path.join(path.dirname(target), `.writer-${path.basename(target)}`);
    writeFileSync(tmp, text);
    renameSync(tmp, target);
  }

  /**
   * `rm -rf` of net.d under a running agent. The agent puts back its kubeconfig and owner file as soon
   * as they are deleted, so one pass over the entries can lose the race to the final rmdir (ENOTEMPTY);
   * Node then deletes again, as `rm -rf` run twice would.
   */
  removeNetDir(): void {
    rmSync(this.netDir, { recursive: true, maxRetries: 10, retryDelay: 10 });
  }

  putFixture(name: string, as = name): void {
    this.put(as, fixture(name));
  }

  read(file: string): string {
    return readFileSync(path.isAbsolute(file) ? file : this.net(file), 'utf8');
  }

  /** True when the file holds our plugin last, exactly once. */
  isChained(file: string): boolean {
    try {
      const doc = JSON.parse(this.read(file)) as { plugins?: JsonObject[] };
      const plugins = doc.plugins ?? [];
      return JSON.stringify(plugins.at(-1)) === JSON.stringify(this.plugin) && plugins.filter((p) => p.type === this.plugin.type).length === 1;
    } catch {
      return false;
    }
  }

  /** Every file of net.d that still carries the plugin, backups included. */
  carriers(): string[] {
    return readdirSync(this.netDir).filter((n) => !n.startsWith('ZZZ') && !n.startsWith('.') && this.read(n).includes(`"${String(this.plugin.type)}"`));
  }

  holdsPlugin(file: string): boolean {
    return this.read(file).includes(`"${String(this.plugin.type)}"`);
  }

  /**
   * Starts the CLI; `prefix` runs it through a wrapper such as `prlimit --nofile=256`; `cli` is the
   * bundle to run (the repository's by default).
   */
  start(extra: NodeJS.ProcessEnv = {}, args: string[] = ['run'], prefix: string[] = [], cli = cliFile): DaemonProcess {
    const [command, ...rest] = [...prefix, process.execPath, cli, ...args];
    const env = this.env(extra);
    const child = spawn(command!, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const port = Number(env.HEALTH_PORT);
    return new DaemonProcess(child, port > 0 ? port : undefined);
  }

  /** Starts the daemon and waits until its first scan is done. */
  async started(extra: NodeJS.ProcessEnv = {}): Promise<DaemonProcess> {
    const daemon = this.start(extra);
    await daemon.waitLog('started');
    return daemon;
  }

  /** started(), serving its probes on a free port of its own (DaemonProcess.ready(), .stoodDown()). */
  async startedWithProbes(extra: NodeJS.ProcessEnv = {}): Promise<DaemonProcess> {
    return this.started({ HEALTH_PORT: String(await freePort()), ...extra });
  }

  cli(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Finished> {
    return runProcess(process.execPath, [cliFile, ...args], { env: this.env(extra) });
  }
}
