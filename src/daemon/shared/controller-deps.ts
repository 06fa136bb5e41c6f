// What every controller of the daemon is given (docs/design.md, Start): the configuration, the host
// root, logs and metrics, readiness (for its own conditions), the phase, and whether net.d is watched.
import type { Config } from '../../config.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import type { Metrics } from './metrics.js';
import type { Readiness } from './readiness.js';
import type { PhaseState } from './phase.js';

export interface ControllerDeps {
  config: Config;
  root: HostRoot;
  log: Logger;
  metrics: Metrics;
  readiness: Readiness;
  phase: PhaseState;
  /** True while net.d is watched (armed). */
  netDirArmed: () => boolean;
  /** A condition this controller owns changed: readiness may have changed. */
  onConditionChange: () => void;
}
