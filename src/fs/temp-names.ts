// The names of the agent's own temp files: hidden, ending in .tmp, never a config for anyone (libcni
// goes by extension, and every config rule refuses a leading dot). A name carries which process made
// it, the target's name hash and the hash of the content it expects to replace, so that the sweep at
// start tells a crash's leftovers apart (daemon/lifecycle/temp-sweep.ts). Pure but for the process's
// random token.
import { digest } from '../native/digest.js';
import { sha256 } from './content-hash.js';

export const TEMP_MARKER = '.cni-chainer-';

// Which process made a temp file: during a DaemonSet upgrade two agents (both possibly PID 1 in their
// containers) write into net.d at once, and each must tell its own renames from the other's.
const PROCESS_TOKEN = digest.getrandom(6).toString('hex');
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
 * temp by that hash (see daemon/lifecycle/temp-sweep.ts).
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
