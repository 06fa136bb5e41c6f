// Builds and runs the C floor (bench/floor.c): the agent's minimal syscalls without the agent.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { summarize, type Summary } from './stats.js';

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

  /** The best of 1, 4 and 16 threads for `files` patches, in ms. */
  storm(dir: string, files: number): { bestMs: number; byThreads: Record<number, number> } {
    const byThreads: Record<number, number> = {};
    for (const threads of [1, 4, 16]) {
      const scratch = mkdtempSync(path.join(dir, 'floor-'));
      try {
        byThreads[threads] = Number(execFileSync(this.binary, ['storm', scratch, String(files), String(threads), this.primaryFile, this.pluginFile], { encoding: 'utf8' }).trim());
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }
    return { bestMs: Math.min(...Object.values(byThreads)), byThreads };
  }

  /** One patch at a time, `intervalMs` apart: the latency of each, rename to patched, in ms. */
  paced(dir: string, files: number, intervalMs: number): Summary {
    const scratch = mkdtempSync(path.join(dir, 'floor-'));
    try {
      const out = execFileSync(this.binary, ['paced', scratch, String(files), String(intervalMs * 1000), this.primaryFile, this.pluginFile], { encoding: 'utf8' });
      return summarize(out.trim().split('\n').map(Number));
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
}
