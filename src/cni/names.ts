// Which directory entries are CNI configs, and which one the container runtime loads. Pure.
import { sha256 } from '../fs/content-hash.js';
import { addon } from '../watch/addon.js';
import path from 'node:path';

// Editors, backups and other tools' temporary files are never configs, whatever their suffix says.
const NOT_A_CONFIG_SUFFIXES = ['~', '.swp', '.tmp', '.bak', '.cilium_bak'];
// libcni's ConfFiles() extensions: the files containerd and CRI-O may load.
const LIBCNI_EXTENSIONS = ['.conf', '.conflist', '.json'];

export const TEMP_MARKER = '.cni-chainer-';

/** True when `name` counts as a CNI config (docs/design.md, Which files). Case-insensitive suffixes. */
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

/**
 * The name of owned mode's copy of `primary` (docs/design.md, Owned mode): the primary's stem,
 * then `-<plugin type>.conflist`. Byte-wise, '-' (0x2d) sorts before '.' (0x2e), so the copy sorts
 * right before the primary it follows, whatever the primary is called (`01-kube-ovn.conflist`,
 * `00-aaa.conflist`), and after every config that sorts before the primary (a meta-plugin's), unless
 * that config's name starts with the primary's stem and '-' or '.' (the caller checks).
 */
export function ownedNameFor(primary: string, pluginType: string): string {
  const ext = path.extname(primary);
  return `${primary.slice(0, primary.length - ext.length)}-${pluginType}.conflist`;
}

/** True for a name ownedNameFor() makes for some primary (earlier versions' `01-linkerd-cni.conflist` too). */
export function isOwnedCopyName(name: string, pluginType: string): boolean {
  const suffix = `-${pluginType}.conflist`;
  return name.endsWith(suffix) && name.length > suffix.length && !name.startsWith('.');
}

// A symlinked single-plugin `X.conf` that was converted: the link itself is kept, renamed to a hidden
// name that no runtime loads (libcni goes by extension) and no config rule matches, so that the
// conflist made from its target follows the target, and stop renames the link back exactly as it was.
const PARKED_LINK_SUFFIX = '.cni-chainer-link';

/** The hidden name a converted `.conf` symlink is kept under. */
export function parkedLinkName(name: string): string {
  return `.${name}${PARKED_LINK_SUFFIX}`;
}

/** The config name a parked link stands for, or undefined for any other name. */
export function parkedLinkOriginal(name: string): string | undefined {
  if (!name.startsWith('.') || !name.endsWith(PARKED_LINK_SUFFIX) || name.length <= PARKED_LINK_SUFFIX.length + 1) return undefined;
  return name.slice(1, -PARKED_LINK_SUFFIX.length);
}

// Which process made a temp file: during a DaemonSet upgrade two agents (both possibly PID 1 in their
// containers) write into net.d at once, and each must tell its own renames from the other's.
const PROCESS_TOKEN = addon.getrandom(6).toString('hex');
const OWN_TEMP_MARKER = `${TEMP_MARKER}${PROCESS_TOKEN}-`;
let tempCounter = 0;

/** Linux's NAME_MAX: the longest directory entry name, in bytes. */
export const NAME_MAX = 255;
// A readable prefix of the target's name, in bytes: the rest of a temp name is fixed-length, so every
// temp name fits NAME_MAX whatever the target's name (a 240-byte config name included).
const NAME_PREFIX_BYTES = 96;

/** A short hash of a name, so that a temp name identifies its target whatever that name's length. */
// Every write names a temp file after its target: remember the hashes of recent names rather than
// hash the same few names again on every write (a storm writes each config once, a fight many times).
const nameHashes = new Map<string, string>();
const NAME_HASHES_KEPT = 4096;

export function nameHash(name: string): string {
  let hash = nameHashes.get(name);
  if (hash === undefined) {
    hash = sha256(name).slice(0, 12);
    if (nameHashes.size >= NAME_HASHES_KEPT) nameHashes.clear();
    nameHashes.set(name, hash);
  }
  return hash;
}

function prefixOf(name: string): string {
  if (Buffer.byteLength(name) <= NAME_PREFIX_BYTES) return name;
  let out = '';
  for (const ch of name) {
    if (Buffer.byteLength(out + ch) > NAME_PREFIX_BYTES) break;
    out += ch;
  }
  return out;
}

/**
 * A temporary name beside `name`: hidden and ending in .tmp, so it never counts as a config. It carries
 * the target's name hash and, for a replacement, the hash of the content it expects to displace:
 * after a crash inside an exchange, the sweep at start tells a displaced newer write from a stale
 * temp by that hash (see daemon/temp-sweep.ts).
 */
export function tempNameFor(name: string, expectHash = 'new'): string {
  tempCounter = (tempCounter + 1) % 1_000_000;
  return `.${prefixOf(name)}${OWN_TEMP_MARKER}${tempCounter}-${nameHash(name)}-${expectHash}.tmp`;
}

export interface TempNameParts {
  token: string;
  nameHash: string;
  /** sha256 prefix of the content the write expected to replace; 'new' when it replaced nothing known. */
  expectHash: string;
}

const TEMP_TAIL = /\.cni-chainer-([0-9a-f]{12})-\d+-([0-9a-f]{12})-([0-9a-f]{12}|new)\.tmp$/;

/** The parts of a temp name made by any cni-chainer process; undefined for any other name. */
export function parseTempName(name: string): TempNameParts | undefined {
  if (!name.startsWith('.')) return undefined;
  const m = TEMP_TAIL.exec(name);
  return m === null ? undefined : { token: m[1]!, nameHash: m[2]!, expectHash: m[3]! };
}

/** A temp name made by any cni-chainer process. */
export function isTempName(name: string): boolean {
  return name.startsWith('.') && name.includes(TEMP_MARKER) && name.endsWith('.tmp');
}

/** A temp name made by this process. */
export function isOwnTempName(name: string): boolean {
  return isTempName(name) && name.includes(OWN_TEMP_MARKER);
}
