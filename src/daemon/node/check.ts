// `cni-chainer check`: a read-only report of the node's CNI configs, and of the plugin binary they name.
import path from 'node:path';
import type { Config } from '../../config.js';
import { statSync, type Stats } from 'node:fs';
import { type ChainedPlugin } from '../../cni/chained-plugin.js';
import { chainState, EMPTY_LIST, noNetwork, planPatch, PLUGIN_ALONE } from '../../cni/conflist.js';
import { ConfigParseError, scanConfig } from '../../cni/scan-config.js';
import { compareNames, isLibcniName, isOwnedCopyName, libcniReading, type LibcniReading } from '../../cni/names.js';
import { loadedConfig, primaryConfig, type ConfigEntry } from '../../cni/runtime-load.js';
import { binaryShortfall } from './plugin-binary.js';
import { readEntry } from '../../fs/bounded-read.js';
import { withDirSync } from '../../fs/dir.js';
import type { HostRoot } from '../../fs/host-root.js';
import { listNodeConfigs, type NodeConfig } from './node-configs.js';
import { resolveDelegate } from '../shared/delegate-path.js';
import { delegationProblem, type Delegation } from '../../cni/meta-plugin.js';

export type ConfigState = 'chained' | 'not-chained' | 'stale-plugin' | 'stale-copy' | 'invalid' | 'unresolved' | 'too-large';

export interface ConfigReport {
  name: string;
  state: ConfigState;
  /** The one the container runtime loads (first in libcni order). */
  loaded: boolean;
  symlink?: { text: string; target?: string; error?: string };
  /** Set for a meta-plugin config (Multus): never chained itself; its state is its delegate's. */
  meta?: true;
  detail?: string;
}

export interface NodeReport {
  netDir: string;
  netDirExists: boolean;
  /** Why net.d could not be looked into: "does not exist", "is not a directory", "cannot be read: EACCES". */
  netDirProblem?: string;
  loaded?: string;
  /** The plugin's binary in the host bin dir: a config naming a missing binary fails every pod. */
  binary: { path: string; present: boolean; detail?: string };
  /** True when the loaded config is chained and its binary is there: `check` exits 0 only then. */
  chained: boolean;
  configs: ConfigReport[];
}

type State = { state: ConfigState; detail?: string; meta?: true };

/** The bytes of host file `file`, or the state that says why there are none. */
function readHostFile(root: HostRoot, file: string, maxBytes: number): Buffer | State {
  try {
    return withDirSync(root.openDir(path.posix.dirname(file)), (dir) => {
      const read = readEntry(dir, path.posix.basename(file), maxBytes);
      if (read.kind === 'too-large') return { state: 'too-large', detail: `${read.size} bytes` } as State;
      if (read.kind !== 'file') return { state: 'unresolved', detail: read.kind } as State;
      return read.bytes;
    });
  } catch (err) {
    return { state: 'unresolved', detail: (err as Error).message };
  }
}

/** Whether `bytes` chain the plugin: a meta-plugin config (Multus) by its delegate (cni/meta-plugin.ts). */
function stateOfBytes(root: HostRoot, bytes: Buffer, plugin: ChainedPlugin, maxBytes: number, viaMeta = false, reading?: LibcniReading): State {
  try {
    const config = scanConfig(bytes, reading);
    if (config.meta !== undefined) {
      if (viaMeta) return { state: 'unresolved', detail: delegationProblem.nested };
      return { ...metaState(root, config.meta, bytes, plugin, maxBytes), meta: true };
    }
    const none = noNetwork(config, plugin);
    if (none !== undefined) return { state: 'invalid', detail: none === 'empty' ? EMPTY_LIST : PLUGIN_ALONE };
    const state = config.shape === 'single' ? 'not-chained' : chainState(config, plugin);
    if (state === 'stale-plugin') return { state, detail: 'holds the plugin, but not as configured or not last' };
    return { state };
  } catch (err) {
    if (err instanceof ConfigParseError) return { state: 'invalid', detail: err.message };
    return { state: 'unresolved', detail: (err as Error).message };
  }
}

function metaState(root: HostRoot, meta: Delegation, bytes: Buffer, plugin: ChainedPlugin, maxBytes: number): State {
  switch (meta.kind) {
    case 'embedded':
      return withDetail(stateOfBytes(root, bytes.subarray(meta.start, meta.end), plugin, maxBytes, true), "in Multus' embedded delegate");
    case 'path': {
      const file = resolveDelegate(root, meta.path);
      if (file === undefined) return { state: 'unresolved', detail: `delegates to ${meta.path}, which does not resolve to a file` };
      const delegate = readHostFile(root, file, maxBytes);
      return withDetail(Buffer.isBuffer(delegate) ? stateOfBytes(root, delegate, plugin, maxBytes, true) : delegate, `delegates to ${file}`);
    }
    case 'name':
      return { state: 'unresolved', detail: delegationProblem.byName(meta.name) };
    case 'auto':
      // Decided by the config after it (inspectNode): this one alone cannot say.
      return { state: 'unresolved', detail: delegationProblem.auto };
    default:
      return { state: 'invalid', detail: delegationProblem.noDelegate };
  }
}

function withDetail(state: State, detail: string): State {
  return { ...state, detail: state.detail === undefined ? detail : `${detail}: ${state.detail}` };
}

/** A config of net.d, read as the runtime reads its `name`. */
function stateOf(root: HostRoot, name: string, file: string | undefined, plugin: ChainedPlugin, maxBytes: number): State {
  if (file === undefined) return { state: 'unresolved' };
  const bytes = readHostFile(root, file, maxBytes);
  return Buffer.isBuffer(bytes) ? stateOfBytes(root, bytes, plugin, maxBytes, false, libcniReading(name)) : bytes;
}

/**
 * The plugin's binary as the runtime needs it: in the host bin dir, executable, and (where the
 * container's copy can be seen) the same size and mode as that copy, which `run` installs.
 */
function binaryState(root: HostRoot, binDir: string, containerBinDir: string | undefined, name: string): { present: boolean; detail?: string } {
  let source: Stats | undefined;
  if (containerBinDir !== undefined) {
    try {
      source = statSync(path.join(containerBinDir, name));
    } catch {
      return { present: false, detail: `not in CONTAINER_CNI_BIN_DIR (${containerBinDir}): an image without the plugin?` };
    }
  }
  let st;
  try {
    st = withDirSync(root.openDir(binDir), (dir) => dir.lstat(name));
  } catch {
    st = undefined;
  }
  switch (binaryShortfall(source, st)) {
    case 'missing':
      return { present: false };
    case 'not-executable':
      return { present: false, detail: 'not executable' };
    case 'differs':
      return { present: false, detail: "differs from CONTAINER_CNI_BIN_DIR's copy" };
  }
  return { present: true };
}

export type CheckConfig = Pick<Config, 'netDir' | 'binDir' | 'suffixes' | 'maxConfigBytes'> & Partial<Pick<Config, 'containerBinDir' | 'mode' | 'ownedConfigName'>>;

export function inspectNode(root: HostRoot, config: CheckConfig, plugin: ChainedPlugin): NodeReport {
  const binary = { path: path.posix.join(config.binDir, plugin.type), ...binaryState(root, config.binDir, config.containerBinDir, plugin.type) };
  let configs: NodeConfig[] | undefined;
  try {
    configs = listNodeConfigs(root, config.netDir, config.suffixes);
  } catch (err) {
    const problem = `cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    return { netDir: config.netDir, netDirExists: true, netDirProblem: problem, binary, chained: false, configs: [] };
  }
  if (configs === undefined) {
    const resolved = root.resolve(config.netDir);
    const problem = resolved.ok && resolved.kind !== 'dir' ? 'is not a directory' : 'does not exist';
    return { netDir: config.netDir, netDirExists: false, netDirProblem: problem, binary, chained: false, configs: [] };
  }
  // A name that is not UTF-8 may be the one libcni loads (it reads names as bytes): it counts, unread.
  const loaded = loadedConfig(configs.map((c) => ({ name: c.name, kind: c.undecodable === true ? 'undecodable' : c.file !== undefined ? 'file' : 'other' }) satisfies ConfigEntry))?.name;
  const reports = configs
    .sort((a, b) => compareNames(a.name, b.name))
    .map(
      (c): ConfigReport => ({
        name: c.name,
        loaded: c.name === loaded,
        symlink: c.symlink,
        ...(c.undecodable === true ? { state: 'unresolved', detail: 'name is not valid UTF-8: cni-chainer cannot open it' } : stateOf(root, c.name, c.file, plugin, config.maxConfigBytes)),
      }),
    );
  // Multus' shim with no network named: its daemon runs the first other config the runtime could load.
  reports.forEach((report, k) => {
    if (report.meta !== true || report.detail !== delegationProblem.auto) return;
    const next = reports.slice(k + 1).find((r) => r.meta !== true && isLibcniName(r.name));
    report.state = next?.state ?? 'unresolved';
    report.detail = next === undefined ? `${delegationProblem.auto}, and there is none` : `${delegationProblem.auto}: ${next.name}`;
  });
  if (config.mode === 'owned') checkOwnedCopy(root, config, plugin, reports, configs);
  const chained = binary.present && reports.some((r) => r.loaded && r.state === 'chained');
  return { netDir: config.netDir, netDirExists: true, loaded, binary, chained, configs: reports };
}

/**
 * Owned mode: the copy the runtime loads must be the primary's current config plus the plugin. While
 * the agent is down (killed, OOM, a node crash) the primary's changes never reach it (a stale copy).
 */
function checkOwnedCopy(root: HostRoot, config: CheckConfig, plugin: ChainedPlugin, reports: ConfigReport[], configs: NodeConfig[]): void {
  const isCopy = (name: string) => name === config.ownedConfigName || isOwnedCopyName(name, plugin.type);
  const copy = reports.find((r) => r.loaded && isCopy(r.name) && r.state === 'chained');
  if (copy === undefined) return;
  const byName = new Map(configs.map((c) => [c.name, c]));
  // The primary: the first config after the copy that is no copy and no meta-plugin.
  const after = reports.filter((r) => compareNames(r.name, copy.name) > 0).map((r) => ({ ...r, kind: 'file' as const }));
  const primary = primaryConfig(after, (r) => isCopy(r.name) || r.meta === true);
  const primaryFile = primary === undefined ? undefined : byName.get(primary.name)?.file;
  if (primary === undefined || primaryFile === undefined) {
    copy.state = 'stale-copy';
    copy.detail = 'no primary config is left to copy';
    return;
  }
  const primaryBytes = readHostFile(root, primaryFile, config.maxConfigBytes);
  const copyBytes = readHostFile(root, byName.get(copy.name)!.file!, config.maxConfigBytes);
  if (!Buffer.isBuffer(primaryBytes) || !Buffer.isBuffer(copyBytes)) return;
  const plan = planPatch(primaryBytes, plugin, libcniReading(primary.name));
  const expected = plan.action === 'write' ? plan.bytes : plan.action === 'none' ? primaryBytes : undefined;
  if (expected !== undefined && !expected.equals(copyBytes)) {
    copy.state = 'stale-copy';
    copy.detail = `differs from ${primary.name} plus the plugin (the primary changed while cni-chainer was not running)`;
  }
}

/** A name as it is safe to print: control characters (a newline could forge report lines) escaped. */
export function printable(name: string): string {
  return /[\u0000-\u001f\u007f"\\]/.test(name) ? JSON.stringify(name) : name;
}

export function formatReport(report: NodeReport): string {
  if (report.netDirProblem !== undefined) return `${printable(report.netDir)}: ${report.netDirProblem}\nnot chained: no CNI config can be read\n`;
  const lines = [`${report.netDir}:`];
  if (report.configs.length === 0) lines.push('  (no CNI config)');
  for (const c of report.configs) {
    let line = `  ${c.loaded ? '*' : ' '} ${printable(c.name)}  ${c.state}`;
    if (c.symlink !== undefined) {
      line += `  -> ${printable(c.symlink.text)}${c.symlink.target !== undefined ? ` (${printable(c.symlink.target)})` : ` [${printable(c.symlink.error ?? '')}]`}`;
    }
    if (c.detail !== undefined) line += `  (${printable(c.detail)})`;
    lines.push(line);
  }
  lines.push(`plugin binary ${report.binary.path}: ${report.binary.present ? 'present' : `MISSING${report.binary.detail === undefined ? '' : `: ${report.binary.detail}`} (every pod on a config that names it fails)`}`);
  if (report.loaded === undefined) lines.push('not chained: no config the runtime would load');
  else if (!report.binary.present) lines.push(`NOT chained: the runtime loads ${printable(report.loaded)}, but the plugin binary is missing`);
  else lines.push(`${report.chained ? 'chained' : 'NOT chained'}: the runtime loads ${printable(report.loaded)} (marked *)`);
  return `${lines.join('\n')}\n`;
}
