// Which meta-plugin configs (Multus) of net.d read which file by path: a single-plugin `.conf` one of
// them reads is never converted to a conflist, or Multus would find a missing file at every ADD
// (in-place-pass.ts, decide).
import { planPatch, type PatchPlan } from '../../cni/conflist.js';
import { isLibcniName } from '../../cni/names.js';
import { readEntry } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import type { KeeperDeps } from './config-keeper.js';
import type { Source } from './config-sources.js';
import { resolveDelegate } from '../shared/delegate-path.js';

/**
 * The meta-plugin configs of net.d that delegate by path, each with the path as written: one listing
 * and one read of every config. The reconciler keeps the result up to date from its passes, and asks
 * again only after a rescan, so that converting many `.conf` files costs one read of net.d, not one
 * per conversion.
 */
export function listMetaDelegates(deps: KeeperDeps, netDir: Dir): Map<string, string> {
  const metas = new Map<string, string>();
  // Any order: the result is a map.
  for (const name of netDir.list().filter(isLibcniName)) {
    const read = readEntry(netDir, name, deps.config.maxConfigBytes);
    if (read.kind !== 'file') continue;
    const plan = planPatch(read.bytes, deps.plugin);
    if (plan.action === 'delegates' && plan.delegation.kind === 'path') metas.set(name, plan.delegation.path);
  }
  return metas;
}

/** The meta-plugin config among `metas` (name → delegate path) that reads `source` by path, if any. */
export function metaPluginReading(deps: KeeperDeps, metas: ReadonlyMap<string, string>, netDir: Dir, source: Source): string | undefined {
  const hostPath = deps.root.fromDisk(`${source.dir.disk}/${source.name}`);
  for (const [name, delegatePath] of metas) {
    if (name === source.name && source.dir.disk === netDir.disk) continue;
    if (resolveDelegate(deps.root, delegatePath) === hostPath) return name;
  }
  return undefined;
}

/**
 * The reconciler's copy of listMetaDelegates: listed when a conversion first asks, then kept up to
 * date by the passes of net.d's configs, and dropped at a rescan.
 */
export class MetaDelegates {
  private byName: Map<string, string> | undefined;

  constructor(private readonly deps: KeeperDeps) {}

  /** A pass of config `name` in net.d planned `plan`. */
  planned(name: string, plan: PatchPlan): void {
    if (this.byName === undefined) return;
    if (plan.action === 'delegates' && plan.delegation.kind === 'path') this.byName.set(name, plan.delegation.path);
    else this.byName.delete(name);
  }

  forget(name: string): void {
    this.byName?.delete(name);
  }

  /** A rescan: listed again when next asked. */
  reset(): void {
    this.byName = undefined;
  }

  /** The meta-plugin config that reads `source` by path, if any. */
  readerOf(netDir: Dir, source: Source): string | undefined {
    this.byName ??= listMetaDelegates(this.deps, netDir);
    return metaPluginReading(this.deps, this.byName, netDir, source);
  }
}
