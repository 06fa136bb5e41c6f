// Whether a stop unchains the node (docs/design.md, Stop): CLEANUP_ON_STOP, and for `auto` the API
// server's word on this agent's DaemonSet and Node (kube/stop-facts.ts asks, kube/stop-decision.ts
// decides). Without an API server to ask (no token, no pod name: outside Kubernetes, or tests), a stop
// is an uninstall unless another instance stands by on this node, which then keeps the node chained
// without a gap.
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { NodeCredential } from './node-credential.js';

export interface StopVerdict {
  teardown: boolean;
  reason: string;
}

// A few GETs at most, each bounded: the stop's own deadline (SHUTDOWN_TIMEOUT_S) is never at risk.
const MAX_REQUEST_MS = 5_000;

export async function stopVerdict(config: Config, log: Logger, credential: NodeCredential, standbyWaiting: () => boolean): Promise<StopVerdict> {
  if (config.cleanupOnStop === 'never') return { teardown: false, reason: 'CLEANUP_ON_STOP=never' };
  if (config.cleanupOnStop === 'always') return { teardown: true, reason: 'CLEANUP_ON_STOP=always' };
  if (config.pod !== undefined) {
    const facts = await credential.stopFacts(Math.min(MAX_REQUEST_MS, Math.floor(config.shutdownTimeoutMs / 5)));
    if (facts !== undefined) {
      // Loaded only now: a node that never stops never pays for it.
      const { decideStop, summarize } = await import('../../kube/stop-decision.js');
      log.info({ answers: summarize(facts) }, "the API server's answers for the stop");
      const decision = decideStop(facts);
      return { teardown: decision.kind === 'uninstall', reason: decision.reason };
    }
    log.warn({ pod: config.pod.name }, 'POD_NAME is set but there is no service-account token or KUBERNETES_SERVICE_HOST: deciding the stop without the API server');
  }
  if (standbyWaiting()) return { teardown: false, reason: 'another instance stands by on this node: handing it over' };
  return { teardown: true, reason: 'no API server to ask and no other instance on this node: removing what was installed' };
}
