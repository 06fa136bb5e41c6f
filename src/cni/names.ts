// Which directory entries are CNI configs, and which one the container runtime loads. Pure.
import { randomBytes } from 'node:crypto';
import path from 'node:path';

// Editors, backups and other tools' temporary files are never configs, whatever their suffix says.
const NOT_A_CONFIG_SUFFIXES = ['~', '.swp', '.tmp', '.bak', '.cilium_bak'];
// libcni's ConfFiles() extensions: the files containerd and CRI-O may load.
const LIBCNI_EXTENSIONS = ['.conf', '.conflist', '.json'];

export const TEMP_MARKER = '.cni-chainer-';

/** True when `name` counts as a CNI config (DESIGN §3 "Which files"). Case-insensitive suffixes. */
export function isConfigName(name: string, suffixes: readonly string[]): boolean {
  if (name.startsWith('.')) return false;
  const lower = name.toLowerCase();
  if (NOT_A_CONFIG_SUFFIXES.some((s) => lower.endsWith(s))) return false;
  return suffixes.some((s) => lower.endsWith(s) && lower.length > s.length);
}

/** True when libcni would consider the file (exact, case-sensitive extension match, as in Go). */
export function isLibcniName(name: string): boolean {
  return LIBCNI_EXTENSIONS.includes(path.extname(name));
}

/** Byte-wise lexicographic order, as Go's sort.Strings orders file names. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The config files in the order libcni tries them; the first is the one the runtime loads. */
export function libcniOrder(names: Iterable<string>): string[] {
  return [...names].filter(isLibcniName).sort(compareNames);
}

/** The name a single-plugin config gets once it is a conflist: `10-calico.conf` → `10-calico.conflist`. */
export function conflistName(name: string): string {
  const ext = path.extname(name);
  if (ext.toLowerCase() === '.conf' || ext.toLowerCase() === '.json') return `${name.slice(0, -ext.length)}.conflist`;
  return name;
}

// Which process made a temp file: during a DaemonSet upgrade two agents (both possibly PID 1 in their
// containers) write into net.d at once, and each must tell its own renames from the other's.
const PROCESS_TOKEN = randomBytes(6).toString('hex');
let tempCounter = 0;

/** A temporary name beside `name`: hidden and ending in .tmp, so it never counts as a config. */
export function tempNameFor(name: string): string {
  tempCounter = (tempCounter + 1) % 1_000_000;
  return `.${name}${TEMP_MARKER}${PROCESS_TOKEN}-${tempCounter}.tmp`;
}

/** A temp name made by any cni-chainer process. */
export function isTempName(name: string): boolean {
  return name.startsWith('.') && name.includes(TEMP_MARKER) && name.endsWith('.tmp');
}

/** A temp name made by this process. */
export function isOwnTempName(name: string): boolean {
  return isTempName(name) && name.includes(`${TEMP_MARKER}${PROCESS_TOKEN}-`);
}
