// The benchmark's primary CNI, in a worker thread: writes configs by temp file + rename as fast as it
// can (or at a fixed interval) and records, per file, the monotonic time right after its rename.
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

export interface WriterJob {
  dir: string;
  names: string[];
  text: string;
  /** How many times each file is written (rounds over all names). */
  rounds: number;
  /** Pause between two writes; 0 = as fast as possible. */
  intervalMs: number;
  /**
   * The floor: after each write, do what the agent's patch does to the disk (temp file, write,
   * fsync, rename, directory fsync) right here, with no agent, and time that instead.
   */
  floor?: boolean;
}

export interface WriterResult {
  /** name → hrtime (ns, as a decimal string) of its last rename. */
  renamedAt: Record<string, string>;
  writes: number;
  /** With `floor`: milliseconds from each rename to the same file's patch-like write landing. */
  floorMs?: number[];
}

function patchLikeTheAgent(dir: string, name: string, text: string): void {
  const tmp = path.join(dir, `.${name}.floor-tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  writeSync(fd, text);
  fchmodSync(fd, 0o644);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, path.join(dir, name));
  const dirFd = openSync(dir, 'r');
  fsyncSync(dirFd);
  closeSync(dirFd);
}

const job = workerData as WriterJob;
const renamedAt: Record<string, string> = {};
const pause = new Int32Array(new SharedArrayBuffer(4));
const floorMs: number[] = [];
let writes = 0;
for (let round = 0; round < job.rounds; round++) {
  for (const name of job.names) {
    const tmp = path.join(job.dir, `.${name}.writer-tmp`);
    writeFileSync(tmp, job.text);
    renameSync(tmp, path.join(job.dir, name));
    const at = process.hrtime.bigint();
    renamedAt[name] = at.toString();
    writes++;
    if (job.floor) {
      patchLikeTheAgent(job.dir, name, `${job.text} `);
      floorMs.push(Number(process.hrtime.bigint() - at) / 1e6);
    }
    if (job.intervalMs > 0) Atomics.wait(pause, 0, 0, job.intervalMs);
  }
}
parentPort!.postMessage({ renamedAt, writes, floorMs } satisfies WriterResult);
