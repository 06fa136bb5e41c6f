// The node brought back to what the start left (daemon.ts, install flow), in the start's order: the
// plugin binaries before any config names them, stranded temps swept before configs are read, the
// kubeconfig, then a pass of every config. Runs when net.d is armed (at start, right after step 2
// installed the binaries, so they are not checked twice), when this instance takes the node back, and
// at each resync tick.
import type { BinDirWatch } from './bin-dir-watch.js';
import type { InstalledFiles } from '../node/installed-files.js';
import type { ConfigKeeper } from '../keepers/config-keeper.js';
import type { NodeScan } from './node-scan.js';
import type { TargetDirWatches } from './target-dir-watches.js';

// Temps younger than this may belong to another instance's write in progress (the upgrade overlap):
// left unless net.d was just armed, when no write of ours can be in flight.
const SWEEP_MIN_AGE_MS = 10_000;

export type RefreshTrigger = 'net-dir' | 'take-back' | 'timer';

export interface RefreshedParts {
  binDir: BinDirWatch;
  installed: InstalledFiles;
  scan: NodeScan;
  keeper: ConfigKeeper;
  targetDirs: TargetDirWatches;
}

export async function refreshNode(parts: RefreshedParts, trigger: RefreshTrigger): Promise<void> {
  if (trigger === 'timer') await parts.binDir.renew();
  if (trigger !== 'net-dir') await parts.installed.reinstallBinaries();
  parts.scan.sweep(trigger === 'net-dir' ? 0 : SWEEP_MIN_AGE_MS);
  await parts.installed.syncKubeconfig();
  parts.scan.rescan(trigger === 'net-dir' ? 'start' : trigger);
  if (trigger === 'timer') parts.targetDirs.retry(parts.keeper.targets);
}
