// The in-place keeper's executor (reconciler.ts, runPass): it carries out the effect a pass decided
// (pass-effects.ts) and tells the pass the outcome it ends with, for the book to record. A write goes
// through the writer (in-place-write.ts, one write path: fs/atomic-write.ts); a removal of a config
// re-checks its bytes first (fs/stepwise-write.ts unlinkIfUnchanged). Callbacks, not promises, on
// the write's path: see pass-effects.ts; a removal is rare and may wait on one.
import { unlinkIfUnchanged } from '../../fs/stepwise-write.js';
import { promised, tellWhenSettled, type Done } from '../../done.js';
import type { InPlaceWriter } from './in-place-write.js';
import type { Decision, UnlinkJob } from './pass-effects.js';
import { UNCHANGED, type PassOutcome } from './pass-outcome.js';

export class PassExecutor {
  constructor(private readonly writer: InPlaceWriter) {}

  /** Carries out `decision`'s effect, if it has one, and tells `done` the outcome once (or the error). */
  run(decision: Decision, done: Done<PassOutcome>): void {
    if (decision instanceof Promise) return tellWhenSettled(decision, done);
    if (decision.kind === 'write') return this.writer.write(decision, done);
    if (decision.kind !== 'unlink') return done(undefined, decision);
    tellWhenSettled(unlink(decision), done);
  }

  /** run() as a promise: for a pass that waits on more than the effect (a directory opened for it). */
  settled(decision: Decision): Promise<PassOutcome> {
    return promised((done) => this.run(decision, done));
  }
}

async function unlink(job: UnlinkJob): Promise<PassOutcome> {
  if (job.expect === undefined) {
    job.dir.unlinkExisting([job.name]);
    return job.then;
  }
  // Rewritten since it was read: left as it is, and its own event brings a pass.
  return (await unlinkIfUnchanged(job.dir, job.name, job.expect)) ? job.then : UNCHANGED;
}
