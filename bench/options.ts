// `npm run bench -- [--files 1000] [--paced 200] [--interval-ms 5] [--repeat 3] [--idle-s 60]
//                   [--backends native,parcel] [--disks disk,tmpfs] [--out bench/results] [--tmp DIR]
//                   [--scale 1000,2000] [--storm-scale 1000,4000]`
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WatchBackendName } from '../src/watch/watcher.js';
import { repoRoot } from './repo-root.js';

export function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

export const repo = repoRoot;
/** The agent as the image runs it: the bundle. */
export const cli = path.join(repo, 'dist', 'cni-chainer.mjs');
/** The reference, bundled and started the same way (scripts/bundle.mjs). */
export const bareAgent = path.join(repo, 'dist', 'bench', 'bare-agent.mjs');

export const FILES = Number(option('files', '1000'));
export const REPEAT = Number(option('repeat', '3'));
export const DISKS = option('disks', 'disk,tmpfs').split(',');
export const PACED = Number(option('paced', '200'));
export const INTERVAL_MS = Number(option('interval-ms', '5'));
export const IDLE_S = Number(option('idle-s', '60'));
/** The two sizes of the start with existing configs (bench/start-scaling.ts). */
export const SCALE = option('scale', '1000,2000').split(',').map(Number) as [number, number];
/** The two storm sizes of the storm-scaling phase (bench/storm-scaling.ts). */
export const STORM_SCALE = option('storm-scale', '1000,4000').split(',').map(Number) as [number, number];
export const BACKENDS = option('backends', 'native,parcel').split(',') as WatchBackendName[];
export const OUT = path.resolve(option('out', path.join(repo, 'bench', 'results')));
// Where the scratch host tree lives: the default temp dir (a disk, where fsync costs a journal
// commit), or e.g. /dev/shm (tmpfs, where fsync is free) to see the agent's own overhead.
export const TMP = option('tmp', tmpdir());

export const PLUGIN_FILE = path.join(repo, 'test', 'fixtures', 'plugin', 'linkerd-cni.json');
export const PLUGIN = readFileSync(PLUGIN_FILE, 'utf8');
export const PRIMARY_FILE = path.join(repo, 'test', 'fixtures', 'conflists', '10-calico.conflist');
export const PRIMARY = readFileSync(PRIMARY_FILE, 'utf8');
