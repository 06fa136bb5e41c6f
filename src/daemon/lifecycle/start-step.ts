// The install flow's steps (daemon.ts `install`): each runs once, in order, and one that throws ends
// the start under its label, so that the log and stderr say which step failed and why.
import { ConfigError } from '../../config.js';
import { errnoCode } from '../../fs/errno.js';

/** A start step that failed; `step` says which ("3. watch net.d"), the message says why. */
export class StartStepError extends Error {
  readonly code: string | undefined;
  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super((cause as Error).message, { cause });
    this.name = 'StartStepError';
    this.code = errnoCode(cause);
  }
}

/** Runs one step; its failure becomes a StartStepError under `label`. */
export async function runStep(label: string, run: () => void | Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    // A configuration error stays one: the CLI exits 2 naming the variable.
    if (err instanceof ConfigError) throw err;
    throw new StartStepError(label, err);
  }
}
