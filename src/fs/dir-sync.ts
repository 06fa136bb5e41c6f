// fsync of a directory after a rename, shared between concurrent writers of the same directory.
// During a storm many patches land in net.d at once: one fsync that starts after all their renames
// makes them all durable, so each caller joins the next fsync to start instead of running its own.
//
// The fsync runs on the fd of the caller that starts it; every caller awaits its fsync before it
// closes its own Dir, so that fd is open for as long as the fsync runs.
import { fsync } from 'node:fs';
import { promisify } from 'node:util';
import type { Dir } from './dir.js';

const fsyncAsync = promisify(fsync);

interface DirState {
  running?: Promise<void>;
  queued?: Promise<void>;
}

const states = new Map<string, DirState>();

/** Resolves once an fsync of `dir` that started after this call has completed. */
export function fsyncDir(dir: Dir): Promise<void> {
  const key = dir.disk;
  const state = states.get(key) ?? {};
  states.set(key, state);
  // A queued fsync has not started yet, so it covers this caller's rename too.
  if (state.queued !== undefined) return state.queued;
  const start = (): Promise<void> => {
    const run = fsyncAsync(dir.fd).finally(() => {
      if (state.running === run) state.running = undefined;
      if (state.running === undefined && state.queued === undefined) states.delete(key);
    });
    state.running = run;
    return run;
  };
  if (state.running === undefined) return start();
  // One is running, but it may have started before our rename: queue the next one behind it.
  const queued = state.running
    .catch(() => {})
    .then(() => {
      state.queued = undefined;
      return start();
    });
  state.queued = queued;
  return queued;
}
