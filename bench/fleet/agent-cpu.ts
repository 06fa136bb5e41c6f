// Where the agents' CPU comes from. On a cluster each agent has its node's CPUs and the control plane
// its own; here N agents share 2 cores with etcd and the API server. Two failure modes follow, and
// each would measure this machine instead of the agents: agents starting at once starve the API
// server (its latency and timeouts are then CPU's), and agents at a low priority starve behind it (a
// retry timer due while the API server starts up fires when it is done, in one bunch with the others).
// So the agents run together in one cgroup of the v1 cpu controller, weighted as one process: the
// control plane is never starved by them, and they always get a share, enough for their timers.
// Where that controller is not mounted (cgroup v2), they run at nice 19 instead and the run says so.
import { mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const CPU_V1 = '/sys/fs/cgroup/cpu';

export class AgentCpu {
  private constructor(
    /** The group's directory, or undefined when the agents are niced instead. */
    private readonly group: string | undefined,
  ) {}

  static create(): AgentCpu {
    const group = path.join(CPU_V1, `cc-fleet-${process.pid}`);
    try {
      mkdirSync(group);
      writeFileSync(path.join(group, 'cpu.shares'), '1024');
      return new AgentCpu(group);
    } catch {
      process.stdout.write('fleet: no cgroup v1 cpu controller to put the agents in: they run at nice 19 (their timers may bunch while the API server is busy)\n');
      return new AgentCpu(undefined);
    }
  }

  /** The command that runs `argv` with the agents' CPU. */
  command(argv: string[]): string[] {
    return this.group === undefined ? ['nice', '-n', '19', ...argv] : argv;
  }

  /** Moves a spawned agent (all its threads) into the group. */
  adopt(pid: number | undefined): void {
    if (this.group === undefined || pid === undefined) return;
    try {
      writeFileSync(path.join(this.group, 'cgroup.procs'), String(pid));
    } catch {
      // Exited already.
    }
  }

  /** The group goes once its agents have. */
  remove(): void {
    if (this.group === undefined) return;
    try {
      rmdirSync(this.group);
    } catch (err) {
      process.stderr.write(`fleet: cannot remove ${this.group}: ${(err as Error).message}\n`);
    }
  }
}
