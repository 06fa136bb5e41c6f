// Which directory entries are CNI configs, and the names the agent gives its own files. Pure.
// Which one the container runtime loads is runtime-load.ts.
import path from 'node:path';

// Editors, backups and other tools' temporary files are never configs, whatever their suffix says.
const NOT_A_CONFIG_SUFFIXES = ['~', '.swp', '.tmp', '.bak', '.cilium_bak'];
// libcni's ConfFiles() extensions: the files containerd and CRI-O may load.
const LIBCNI_EXTENSIONS = ['.conf', '.conflist', '.json'];

/** True when `name` counts as a CNI config (docs/design.md, Which files). Case-insensitive suffixes. */
export function isConfigName(name: string, suffixes: readonly string[]): boolean {
  if (name.startsWith('.')) return false;
  // Every event of a storm asks, some twice: an ASCII name (nearly all) is compared in place, without
  // the lower-case copy. Any other goes through toLowerCase, which may change its length (U+0130).
  const lower = isAscii(name) ? name : name.toLowerCase();
  const lowered = lower !== name;
  for (let i = 0; i < NOT_A_CONFIG_SUFFIXES.length; i++) if (endsWithLower(lower, lowered, NOT_A_CONFIG_SUFFIXES[i]!)) return false;
  for (let i = 0; i < suffixes.length; i++) if (endsWithLower(lower, lowered, suffixes[i]!) && lower.length > suffixes[i]!.length) return true;
  return false;
}

/** `name` lower-cased ends with `suffix`: `name` is either lower-cased already or ASCII. */
function endsWithLower(name: string, lowered: boolean, suffix: string): boolean {
  return lowered ? name.endsWith(suffix) : endsWithAsciiLowered(name, suffix);
}

function isAscii(name: string): boolean {
  for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** name.toLowerCase().endsWith(suffix), for an ASCII `name`. */
function endsWithAsciiLowered(name: string, suffix: string): boolean {
  const at = name.length - suffix.length;
  if (at < 0) return false;
  for (let i = 0; i < suffix.length; i++) {
    const c = name.charCodeAt(at + i);
    if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== suffix.charCodeAt(i)) return false;
  }
  return true;
}

/**
 * True when libcni would consider the file: an exact, case-sensitive extension match, with the
 * extension as Go's filepath.Ext takes it (from the last dot: `.conf` itself has one, where Node's
 * path.extname says it has none).
 */
export function isLibcniName(name: string): boolean {
  const dot = name.lastIndexOf('.');
  return dot >= 0 && LIBCNI_EXTENSIONS.includes(name.slice(dot));
}

/**
 * How the runtime reads a file it loads, by its extension alone (go-cni's loadFromConfDir, CRI-O's
 * ocicni): a `.conflist` as a list of plugins, a `.conf` or `.json` as one plugin, whatever either holds.
 */
export type LibcniReading = 'list' | 'single';

export function libcniReading(name: string): LibcniReading | undefined {
  if (!isLibcniName(name)) return undefined;
  return name.endsWith('.conflist') ? 'list' : 'single';
}

/** Byte-wise lexicographic order, as Go's sort.Strings orders file names. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * The name a single-plugin config gets once it is a conflist: `10-calico.conf` → `10-calico.conflist`.
 * Only for the extensions libcni loads, matched as libcni matches them (case-sensitively): a
 * `00-old.CONF` the runtime never loaded must not become a `.conflist` that it loads first. Any other
 * name is returned as it is, and is never converted.
 */
export function conflistName(name: string): string {
  const ext = path.extname(name);
  if (ext === '.conf' || ext === '.json') return `${name.slice(0, -ext.length)}.conflist`;
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

/** True for a name ownedNameFor() makes for some primary (one CNI_OWNED_CONFIG_NAME named, such as `01-linkerd-cni.conflist`, too). */
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
