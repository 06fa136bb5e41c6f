// One node of the fleet: a scratch host tree (net.d with a primary conflist, the bin dir, the image's
// plugin binary, the pod's service-account dir) and the agent on it, the real CLI as a host process
// with the token the API server issued for its pod. Its log lines are counted by message, not kept;
// its CPU and memory read from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AgentCpu } from './agent-cpu.js';

const CLK_TCK = 100;

export interface AgentIdentity {
  node: string;
  pod: string;
  token: string;
}

export class FleetAgent {
  readonly netDir: string;
  readonly binDir: string;
  private child: ChildProcess | undefined;
  private exited: Promise<number | null> | undefined;
  /** Log lines by message, over the agent's life. */
  readonly said = new Map<string, number>();
  /** When each message was first said (ms since the epoch), and when the process was spawned. */
  private readonly firstSaid = new Map<string, number>();
  startedAt = 0;
  private readonly waiters: Array<{ msg: string; resolve: () => void }> = [];

  constructor(
    readonly node: string,
    readonly root: string,
  ) {
    this.netDir = path.join(root, 'host', 'etc', 'cni', 'net.d');
    this.binDir = path.join(root, 'host', 'opt', 'cni', 'bin');
  }

  /** The node's files: the primary's conflist, the bin dir, the image's plugin binary. */
  prepare(primary: string): void {
    mkdirSync(this.netDir, { recursive: true });
    mkdirSync(this.binDir, { recursive: true });
    mkdirSync(path.join(this.root, 'container-bin'), { recursive: true });
    writeFileSync(path.join(this.root, 'container-bin', 'linkerd-cni'), '#!/bin/sh\necho linkerd-cni\n');
    chmodSync(path.join(this.root, 'container-bin', 'linkerd-cni'), 0o755);
    writeFileSync(path.join(this.netDir, '10-calico.conflist'), primary);
  }

  get config(): string {
    return path.join(this.netDir, '10-calico.conflist');
  }

  /** Starts the agent as the pod `identity.pod` (a new service-account dir each time, as a new pod gets). */
  start(identity: AgentIdentity, cli: string, pluginFile: string, api: { host: string; port: number; ca: string }, cpu: AgentCpu): void {
    const saDir = path.join(this.root, `sa-${identity.pod}`);
    mkdirSync(saDir, { recursive: true });
    writeFileSync(path.join(saDir, 'token'), identity.token);
    writeFileSync(path.join(saDir, 'ca.crt'), api.ca);
    writeFileSync(path.join(saDir, 'namespace'), 'linkerd-cni');
    const env = {
      PATH: process.env.PATH,
      CONTAINER_MOUNT_PREFIX: path.join(this.root, 'host'),
      CONTAINER_CNI_BIN_DIR: path.join(this.root, 'container-bin'),
      SERVICEACCOUNT_PATH: saDir,
      KUBERNETES_SERVICE_HOST: api.host,
      KUBERNETES_SERVICE_PORT: String(api.port),
      CNI_NETWORK_CONFIG_FILE: pluginFile,
      POD_NAME: identity.pod,
      POD_NAMESPACE: 'linkerd-cni',
      NODE_NAME: identity.node,
      HEALTH_PORT: '0',
      RESYNC_INTERVAL_S: '0',
      LOG_LEVEL: 'info',
      MALLOC_ARENA_MAX: '2',
    };
    this.startedAt = Date.now();
    // Under PR_SET_PDEATHSIG (setpriv): a bench killed outright takes its agents with it. setpriv (and
    // nice, where used) exec the agent: the pid is the agent's.
    const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', ...cpu.command([process.execPath, cli, 'run'])], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    cpu.adopt(child.pid);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        let msg: string;
        try {
          msg = String((JSON.parse(line) as { msg?: unknown }).msg);
        } catch {
          continue;
        }
        this.said.set(msg, (this.said.get(msg) ?? 0) + 1);
        if (!this.firstSaid.has(msg)) this.firstSaid.set(msg, Date.now());
        for (let i = this.waiters.length - 1; i >= 0; i--) {
          if (this.waiters[i]!.msg === msg) this.waiters.splice(i, 1)[0]!.resolve();
        }
      }
    });
  }

  /** Resolves once the agent has said `msg` (at once if it already has, since its last start). */
  until(msg: string): Promise<void> {
    if ((this.said.get(msg) ?? 0) > 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ msg, resolve }));
  }

  /** Ms from the spawn to the first time `msg` was said; undefined if it never was. */
  msAfterStart(msg: string): number | undefined {
    const at = this.firstSaid.get(msg);
    return at === undefined ? undefined : at - this.startedAt;
  }

  count(msg: string): number {
    return this.said.get(msg) ?? 0;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** CPU time used so far (user + system), in ms. */
  cpuMs(): number {
    if (this.pid === undefined) return 0;
    try {
      const fields = readFileSync(`/proc/${this.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
    } catch {
      return 0;
    }
  }

  /** Resident and anonymous memory now, in KiB. */
  memoryKiB(): { rss: number; anon: number } {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
      return { rss: field('VmRSS'), anon: field('RssAnon') };
    } catch {
      return { rss: 0, anon: 0 };
    }
  }

  /** Sends `signal` and waits for the exit; the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child === undefined || this.exited === undefined) return null;
    this.child.kill(signal);
    const code = await this.exited;
    this.child = undefined;
    return code;
  }

  /** Forgets what was said (a new agent on the same node). */
  resetCounts(): void {
    this.said.clear();
    this.firstSaid.clear();
  }
}
