// The agent under test: the real CLI in its own process, with its logs in a file (as a container
// runtime would keep them), and its CPU time and peak memory read from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import path from 'node:path';

export class Agent {
  readonly child: ChildProcess;
  readonly logFile: string;

  constructor(cli: string, env: NodeJS.ProcessEnv, logDir: string, name: string, nodeArgs: string[] = []) {
    this.logFile = path.join(logDir, `${name}.log`);
    const out = openSync(this.logFile, 'w');
    this.child = spawn(process.execPath, [...nodeArgs, cli, 'run'], { env, stdio: ['ignore', out, out] });
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

  /** User + system CPU seconds used so far. */
  cpuSeconds(): number {
    const fields = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat(5); here 0-based after the comm field.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  private status(field: string): number {
    const line = readFileSync(`/proc/${this.child.pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`))!;
    return Number(line.split(/\s+/)[1]) / 1024;
  }

  /** Resident set size now, in MiB (VmRSS). */
  rssMiB(): number {
    return this.status('VmRSS');
  }

  /** Peak resident set size in MiB (VmHWM). */
  peakRssMiB(): number {
    return this.status('VmHWM');
  }

  async stop(): Promise<{ code: number | null; ms: number }> {
    const start = Date.now();
    const exited = new Promise<number | null>((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.child.kill('SIGTERM');
    const code = await exited;
    return { code, ms: Date.now() - start };
  }
}
