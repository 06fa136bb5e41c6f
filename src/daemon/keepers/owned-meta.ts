// Owned mode and a meta-plugin config (Multus) that the runtime loads before our copy
// (docs/design.md, Neighbours): Multus runs its delegate, never our copy, so the plugin must reach
// the delegate. An embedded delegate is chained in place, byte-exact (cni/meta-plugin.ts); a
// delegate named by path must be our copy, or the pods Multus wires are not meshed.
import { planPatch, scanConfig } from '../../cni/conflist.js';
import { delegationProblem } from '../../cni/meta-plugin.js';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { ownerOf, type EntryRead } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import type { KeeperDeps } from './config-keeper.js';
import type { ProblemStatus } from './readiness.js';
import { resolveDelegate } from './symlink-targets.js';

export type MetaOutcome =
  | { kind: 'fine' }
  | { kind: 'problem'; status: ProblemStatus; detail: string }
  /** It changed while we wrote: look again. */
  | { kind: 'retrigger' };

const FINE: MetaOutcome = { kind: 'fine' };

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
export async function keepMeta(deps: KeeperDeps, dir: Dir, name: string, read: Extract<EntryRead, { kind: 'file' }>, ownedName: string): Promise<MetaOutcome> {
  const plan = planPatch(read.bytes, deps.plugin);
  switch (plan.action) {
    case 'none':
      return FINE;
    case 'write': {
      const noBinary = deps.binary.problem();
      if (noBinary !== undefined) return { kind: 'problem', status: 'no-binary', detail: noBinary };
      const result = await writeFileAtomic(dir, name, plan.bytes, { ...ownerOf(read), expect: read.bytes });
      if (result === 'stale') return { kind: 'retrigger' };
      deps.metrics.patches.inc();
      deps.log.info({ file: name }, "chained plugin into the meta-plugin's embedded delegate");
      return FINE;
    }
    case 'delegates': {
      const delegation = plan.delegation;
      const copyPath = `${deps.config.netDir}/${ownedName}`;
      // The shim's daemon runs the first other config of net.d: our copy, which sorts right after it.
      if (delegation.kind === 'auto') return FINE;
      if (delegation.kind === 'path') {
        const resolved = resolveDelegate(deps.root, delegation.path);
        if (resolved !== undefined && resolved === copyPath) return FINE;
        return { kind: 'problem', status: 'error', detail: delegationProblem.notTheCopy(delegation.path, copyPath) };
      }
      return { kind: 'problem', status: 'error', detail: delegation.kind === 'name' ? delegationProblem.byName(delegation.name, copyPath) : delegationProblem.noDelegate };
    }
    default:
      return { kind: 'problem', status: plan.action === 'invalid' ? 'invalid' : 'error', detail: plan.reason };
  }
}
