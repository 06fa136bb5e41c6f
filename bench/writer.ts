// The benchmark's primary CNI, in a worker thread: writes configs by temp file + rename as fast as it
// can (or at a fixed interval) and records, per file, the monotonic time right after its rename.
import { renameSync, writeFileSync } from 'node:fs';
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
}

export interface WriterResult {
  /** name → hrtime (ns, as a decimal string) of its last rename. */
  renamedAt: Record<string, string>;
  writes: number;
}

const job = workerData as WriterJob;
const renamedAt: Record<string, string> = {};
const pause = new Int32Array(new SharedArrayBuffer(4));
let writes = 0;
for (let round = 0; round < job.rounds; round++) {
  for (const name of job.names) {
    const tmp = path.join(job.dir, `.${name}.writer-tmp`);
    writeFileSync(tmp, job.text);
    renameSync(tmp, path.join(job.dir, name));
    const at = process.hrtime.bigint();
    renamedAt[name] = at.toString();
    writes++;
    if (job.intervalMs > 0) Atomics.wait(pause, 0, 0, job.intervalMs);
  }
}
parentPort!.postMessage({ renamedAt, writes } satisfies WriterResult);
