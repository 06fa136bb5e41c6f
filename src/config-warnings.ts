// Settings that are valid but leave the agent doing less than the operator probably meant, said once
// at start, each naming the variable (docs/design.md, Configuration). Pure.
import type { Config } from './config.js';

export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.pod !== undefined && config.nodeName === undefined) {
    warnings.push(
      'NODE_NAME is not set (POD_NAME is): the startup taint is never removed, no Events are written, no token bound to this node is asked for, and a stop cannot tell whether the DaemonSet still runs a pod here; set it from the downward API (spec.nodeName)',
    );
  }
  if (config.pod === undefined && config.nodeName !== undefined) {
    warnings.push(
      'POD_NAME is not set (NODE_NAME is): a stop cannot ask which DaemonSet runs this agent, and decides without the API server (an uninstall, unless another instance stands by); set it from the downward API (metadata.name)',
    );
  }
  return warnings;
}
