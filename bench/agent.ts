// The agent under test: the real CLI in its own process, with its logs in a file (as a container
// runtime would keep them), and its CPU time and peak memory read from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export type ThreadKind = 'main' | 'pool' | 'v8' | 'other';

// Node names its threads (comm): MainThread, libuv-worker, V8Worker, DelayedTaskSche(duler), ...
function threadKind(comm: string): ThreadKind {
  if (comm === 'MainThread') return 'main';
  if (comm.startsWith('libuv-worker')) return 'pool';
  if (comm.startsWith('V8Worker') || comm.startsWith('DelayedTaskSch')) return 'v8';
  return 'other';
}

export interface Memory {
  anonMiB: number;
  fileMiB: number;
  shmemMiB: number;
}

export class Agent {
  readonly child: ChildProcess;
  readonly logFile: string;

  /** Runs `node [nodeArgs] program run`; or, with `program` an array, `node ...program`. */
  constructor(program: string | string[], env: NodeJS.ProcessEnv, logDir: string, name: string, nodeArgs: string[] = []) {
    this.logFile = path.join(logDir, `${name}.log`);
    const out = openSync(this.logFile, 'w');
    const args = typeof program === 'string' ? [...nodeArgs, program, 'run'] : [...nodeArgs, ...program];
    this.child = spawn(process.execPath, args, { env, stdio: ['ignore', out, out] });
  }

  logs(): Array<{ msg?: string }> {
    return readFileSync(this.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string });
  }

  async waitForLog(msg: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.logs().some((l) => l.msg === msg)) {
      if (this.child.exitCode !== null) throw new Error(`agent exited (${this.child.exitCode}); see ${this.logFile}`);
      if (Date.now() > deadline) throw new Error(`agent did not log "${msg}" within ${timeoutMs} ms; see ${this.logFile}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /**
   * CPU seconds used so far by each kind of thread: the main thread (JavaScript, the event loop),
   * libuv's pool (the addon's writes), V8's platform threads (concurrent GC and compilation), other.
   * From each thread's schedstat (nanoseconds on the CPU, proc(5)): /proc/PID/stat's utime and stime
   * count whole clock ticks, 10 ms, which is 10 µs per file in a storm of 1,000. (A thread that exits
   * takes its time with it; the agent's threads live as long as it does.)
   */
  cpuByThread(): Record<ThreadKind, number> {
    const out: Record<ThreadKind, number> = { main: 0, pool: 0, v8: 0, other: 0 };
    const tasks = `/proc/${this.child.pid}/task`;
    for (const tid of readdirSync(tasks)) {
      try {
        const comm = readFileSync(`${tasks}/${tid}/comm`, 'utf8').trim();
        const ns = Number(readFileSync(`${tasks}/${tid}/schedstat`, 'utf8').split(' ')[0]);
        out[threadKind(comm)] += ns / 1e9;
      } catch {
        // exited between the listing and the read
      }
    }
    return out;
  }

  /**
   * Minor page faults so far, all threads (proc(5): /proc/PID/stat's minflt). A count, not a time, so
   * a slow minute of the machine leaves it as it is: pages touched for the first time, or touched
   * again after the process gave them back (the agent's memory return after a burst,
   * daemon/lifecycle/memory-return.ts).
   */
  minorFaults(): number {
    const stat = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces: the fields are counted after it, from state (3).
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[10 - 3]);
  }

  /** CPU seconds used so far, all threads. */
  cpuSeconds(): number {
    return Object.values(this.cpuByThread()).reduce((a, b) => a + b, 0);
  }

  private status(field: string): number {
    const line = readFileSync(`/proc/${this.child.pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`))!;
    return Number(line.split(/\s+/)[1]) / 1024;
  }

  /**
   * Resident memory now, in MiB, split as the kernel counts it (proc(5)): anonymous pages (heap,
   * stacks, malloc: what only this process can hold, and what a container's working set is mostly
   * made of) apart from file-backed pages (the node binary's code and data, shared with every node
   * process on the machine and reclaimable) and shared memory.
   */
  memory(): Memory {
    return { anonMiB: this.status('RssAnon'), fileMiB: this.status('RssFile'), shmemMiB: this.status('RssShmem') };
  }

  /** Resident set size now, in MiB (VmRSS). */
  rssMiB(): number {
    return this.status('VmRSS');
  }

  /** Peak resident set size in MiB (VmHWM). */
  peakRssMiB(): number {
    return this.status('VmHWM');
  }

  /** SIGKILL, if it still runs: a failed phase must not leave the agent running behind the bench. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  async stop(): Promise<{ code: number | null; ms: number }> {
    const start = Date.now();
    const exited = new Promise<number | null>((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.child.kill('SIGTERM');
    const code = await exited;
    return { code, ms: Date.now() - start };
  }
}
