// fsync of a directory after a rename, shared between concurrent writers of the same directory.
// During a storm many patches land in net.d at once: one fsync that starts after all their renames
// makes them all durable, so each caller joins the next fsync to start instead of running its own.
import { closeSync, constants, fsync, openSync } from 'node:fs';
import { promisify } from 'node:util';

const fsyncAsync = promisify(fsync);

async function fsyncDirNow(dir: string): Promise<void> {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await fsyncAsync(fd);
  } finally {
    closeSync(fd);
  }
}

interface DirState {
  running?: Promise<void>;
  queued?: Promise<void>;
}

const states = new Map<string, DirState>();

/** Resolves once an fsync of `dir` that started after this call has completed. */
export function fsyncDir(dir: string): Promise<void> {
  const state = states.get(dir) ?? {};
  states.set(dir, state);
  // A queued fsync has not started yet, so it covers this caller's rename too.
  if (state.queued !== undefined) return state.queued;
  const start = (): Promise<void> => {
    const run = fsyncDirNow(dir).finally(() => {
      if (state.running === run) state.running = undefined;
      if (state.running === undefined && state.queued === undefined) states.delete(dir);
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
