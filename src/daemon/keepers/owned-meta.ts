// Owned mode and a meta-plugin config (Multus) that the runtime loads before our copy
// (docs/design.md, Neighbours): Multus runs its delegate, never our copy, so the plugin must reach
// the delegate. An embedded delegate is chained in place, byte-exact (cni/meta-plugin.ts); a
// delegate named by path must be our copy, or the pods Multus wires are not meshed.
import { planPatch, PLUGIN_ALONE } from '../../cni/conflist.js';
import { scanConfig } from '../../cni/scan-config.js';
import { delegationProblem } from '../../cni/meta-plugin.js';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { ownerOf, type EntryRead } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import type { KeeperDeps } from './config-keeper.js';
import { CHAINED, STALE_WRITE, problem, type PassOutcome } from './pass-outcome.js';
import { resolveDelegate } from '../shared/delegate-path.js';

/** A meta-plugin config (Multus): never a primary (cni/meta-plugin.ts). */
export function isMeta(bytes: Buffer): boolean {
  try {
    return scanConfig(bytes).meta !== undefined;
  } catch {
    return false; // not JSON: no meta-plugin either
  }
}

/**
 * A meta-plugin config (Multus) that the runtime loads before our copy: its embedded delegate is
 * chained in place, byte-exact; a delegate it names by path must be our copy.
 */
export async function keepMeta(deps: KeeperDeps, dir: Dir, name: string, read: Extract<EntryRead, { kind: 'file' }>, ownedName: string): Promise<PassOutcome> {
  const plan = planPatch(read.bytes, deps.plugin);
  switch (plan.action) {
    case 'none':
      return CHAINED;
    case 'write': {
      const noBinary = deps.binary.problem();
      if (noBinary !== undefined) return problem('no-binary', noBinary);
      const result = await writeFileAtomic(dir, name, plan.bytes, { ...ownerOf(read), expect: read.bytes });
      if (result === 'stale') return STALE_WRITE; // it changed while we wrote: look again
      deps.metrics.patches.inc();
      deps.log.info({ file: name }, "chained plugin into the meta-plugin's embedded delegate");
      return CHAINED;
    }
    case 'delegates': {
      const delegation = plan.delegation;
      const copyPath = `${deps.config.netDir}/${ownedName}`;
      // The shim's daemon runs the first other config of net.d: our copy, which sorts right after it.
      if (delegation.kind === 'auto') return CHAINED;
      if (delegation.kind === 'path') {
        const resolved = resolveDelegate(deps.root, delegation.path);
        if (resolved !== undefined && resolved === copyPath) return CHAINED;
        return problem('error', delegationProblem.notTheCopy(delegation.path, copyPath));
      }
      return problem('error', delegation.kind === 'name' ? delegationProblem.byName(delegation.name, copyPath) : delegationProblem.noDelegate);
    }
    case 'plugin-alone':
      return problem('error', `${PLUGIN_ALONE}: remove it`);
    default:
      return problem(plan.action === 'invalid' ? 'invalid' : 'error', plan.reason);
  }
}
