// Builds and runs the C floor (bench/floor.c): the agent's minimal syscalls without the agent; and
// the same program as the primary CNI that writes the configs the agent patches.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { summarize, type Summary } from './stats.js';

export interface WriterJob {
  dir: string;
  names: string[];
  /** Pause between two writes; 0 = as fast as it can. */
  intervalMs: number;
}

/** When a name was renamed into place: hrtime (ns) right before and right after the rename. */
export interface Renamed {
  before: bigint;
  after: bigint;
}

/**
 * ms from the rename to `at`, an event that followed it (at > before). Measured from the end of the
 * rename, as the floor measures; 0 when the agent was done before the writer read its clock again.
 */
export function msSinceRename(renamed: Renamed, at: bigint): number {
  return at > renamed.after ? Number(at - renamed.after) / 1e6 : 0;
}

export interface FloorStorm {
  bestMs: number;
  byThreads: Record<number, number>;
  cpuUsPerFile: number;
}

/** The median of `storms` by their best time (the lower one of an even count). */
export function medianFloorStorm(storms: FloorStorm[]): FloorStorm {
  return [...storms].sort((a, b) => a.bestMs - b.bestMs)[Math.floor((storms.length - 1) / 2)]!;
}

export class Floor {
  private readonly binary: string;

  /** Compiles floor.c into `workDir` (build output stays out of the repository). */
  constructor(
    source: string,
    workDir: string,
    private readonly primaryFile: string,
    private readonly pluginFile: string,
  ) {
    mkdirSync(workDir, { recursive: true });
    this.binary = path.join(workDir, 'floor');
    execFileSync('gcc', ['-O2', '-pthread', '-o', this.binary, source]);
  }

  /**
   * The best of 1, 4 and 16 threads for `files` patches, in ms, and the CPU per file of that best run
   * (getrusage, all threads: the kernel's work for the syscalls, as the agent's CPU figure counts it).
   */
  storm(dir: string, files: number): FloorStorm {
    const byThreads: Record<number, number> = {};
    const cpuByThreads: Record<number, number> = {};
    for (const threads of [1, 4, 16]) {
      const scratch = mkdtempSync(path.join(dir, 'floor-'));
      try {
        const [ms, cpuUs] = execFileSync(this.binary, ['storm', scratch, String(files), String(threads), this.primaryFile, this.pluginFile], { encoding: 'utf8' }).trim().split(' ').map(Number);
        byThreads[threads] = ms!;
        cpuByThreads[threads] = cpuUs! / files;
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }
    const best = Number(Object.keys(byThreads).reduce((a, b) => (byThreads[Number(b)]! < byThreads[Number(a)]! ? b : a)));
    return { bestMs: byThreads[best]!, byThreads, cpuUsPerFile: cpuByThreads[best]! };
  }

  /** One patch at a time, `intervalMs` apart: the latency of each, rename to patched, in ms. */
  paced(dir: string, files: number, intervalMs: number): Summary {
    return summarize(this.pacedSamples(dir, files, intervalMs));
  }

  /** paced()'s latencies one by one, for runs taken in stretches. */
  pacedSamples(dir: string, files: number, intervalMs: number): number[] {
    const scratch = mkdtempSync(path.join(dir, 'floor-'));
    try {
      const out = execFileSync(this.binary, ['paced', scratch, String(files), String(intervalMs * 1000), this.primaryFile, this.pluginFile], { encoding: 'utf8' });
      return out.trim().split('\n').map(Number);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  /**
   * The primary CNI: writes each name by temp file + rename. In C, in its own process: a writer in
   * Node (a worker thread, before) spent 14-17 ms of the 2 cores on 1,000 renames into tmpfs, twice
   * the floor's whole storm, so the storm measured the writer as much as the agent.
   */
  write(job: WriterJob): Promise<Map<string, Renamed>> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.binary, ['write', job.dir, String(Math.round(job.intervalMs * 1000)), this.primaryFile, ...job.names], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.once('error', reject);
      // 'close', not 'exit': the process can be gone before its last lines are read from the pipe
      // (seen: "exited 0 after 1 of 30 files" in a loaded CI run).
      child.once('close', (code) => {
        const lines = out.trim().split('\n');
        if (code !== 0 || lines.length !== job.names.length) {
          reject(new Error(`floor write exited ${code} after ${lines.length} of ${job.names.length} files`));
          return;
        }
        resolve(
          new Map(
            job.names.map((name, i) => {
              const [before, after] = lines[i]!.split(' ').map(BigInt);
              return [name, { before: before!, after: after! }];
            }),
          ),
        );
      });
    });
  }
}
