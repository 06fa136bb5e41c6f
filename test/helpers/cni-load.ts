// CNI config directories as containerd 2 loads them: tools/cluster/cni-load, built by
// scripts/build-cluster.sh from the go-cni and libcni that the cluster's containerd pins. One process
// reads many directories.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { clusterBinDir } from '../../bench/cluster/control-plane.js';

export interface RuntimeLoad {
  dir: string;
  /** The first config file in libcni's order: the one the runtime loads. */
  first?: string;
  /** Why the load failed; the runtime then has no network from the directory. */
  error?: string;
  name?: string;
  /** The plugins' types, in the order the runtime runs them. */
  plugins: string[];
}

export function loadAsContainerd(dirs: readonly string[]): RuntimeLoad[] {
  if (dirs.length === 0) return [];
  const result = spawnSync(path.join(clusterBinDir(), 'cni-load'), dirs, { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (result.status !== 0) throw new Error(`cni-load: ${result.stderr}`);
  const loads = result.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as RuntimeLoad);
  if (loads.length !== dirs.length) throw new Error(`cni-load: ${loads.length} answers for ${dirs.length} directories`);
  return loads;
}
