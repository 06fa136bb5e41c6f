// `cni-chainer check`: a read-only report of the node's CNI configs, and of the plugin binary they name.
import path from 'node:path';
import type { Config } from '../config.js';
import { chainState, ConfigParseError, scanConfig, type ChainedPlugin } from '../cni/conflist.js';
import { compareNames, libcniOrder } from '../cni/names.js';
import { readEntry } from '../fs/bounded-read.js';
import { withDirSync } from '../fs/dir.js';
import type { HostRoot } from '../fs/host-root.js';
import { listNodeConfigs } from './node-configs.js';

export type ConfigState = 'chained' | 'not-chained' | 'stale-plugin' | 'invalid' | 'unresolved' | 'too-large';

export interface ConfigReport {
  name: string;
  state: ConfigState;
  /** The one the container runtime loads (first in libcni order). */
  loaded: boolean;
  symlink?: { text: string; target?: string; error?: string };
  detail?: string;
}

export interface NodeReport {
  netDir: string;
  netDirExists: boolean;
  loaded?: string;
  /** The plugin's binary in the host bin dir: a config naming a missing binary fails every pod. */
  binary: { path: string; present: boolean };
  /** True when the loaded config is chained and its binary is there: `check` exits 0 only then. */
  chained: boolean;
  configs: ConfigReport[];
}

function stateOf(root: HostRoot, file: string | undefined, plugin: ChainedPlugin, maxBytes: number): { state: ConfigState; detail?: string } {
  if (file === undefined) return { state: 'unresolved' };
  try {
    return withDirSync(root.openDir(path.posix.dirname(file)), (dir) => {
      const read = readEntry(dir, path.posix.basename(file), maxBytes);
      if (read.kind === 'too-large') return { state: 'too-large', detail: `${read.size} bytes` };
      if (read.kind !== 'file') return { state: 'unresolved', detail: read.kind };
      const config = scanConfig(read.bytes);
      const state = config.shape === 'single' ? 'not-chained' : chainState(config, plugin);
      if (state === 'stale-plugin') return { state, detail: 'holds the plugin, but not as configured or not last' };
      return { state };
    });
  } catch (err) {
    if (err instanceof ConfigParseError) return { state: 'invalid', detail: err.message };
    return { state: 'unresolved', detail: (err as Error).message };
  }
}

function binaryPresent(root: HostRoot, binDir: string, name: string): boolean {
  try {
    const st = withDirSync(root.openDir(binDir), (dir) => dir.lstat(name));
    return st !== undefined && st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

export function inspectNode(root: HostRoot, config: Pick<Config, 'netDir' | 'binDir' | 'suffixes' | 'maxConfigBytes'>, plugin: ChainedPlugin): NodeReport {
  const binary = { path: path.posix.join(config.binDir, plugin.type), present: binaryPresent(root, config.binDir, plugin.type) };
  const configs = listNodeConfigs(root, config.netDir, config.suffixes);
  if (configs === undefined) return { netDir: config.netDir, netDirExists: false, binary, chained: false, configs: [] };
  // A name that is not UTF-8 may be the one libcni loads (it reads names as bytes): it counts, unread.
  const loaded = libcniOrder(configs.filter((c) => c.file !== undefined || c.undecodable === true).map((c) => c.name))[0];
  const reports = configs
    .sort((a, b) => compareNames(a.name, b.name))
    .map(
      (c): ConfigReport => ({
        name: c.name,
        loaded: c.name === loaded,
        symlink: c.symlink,
        ...(c.undecodable === true ? { state: 'unresolved', detail: 'name is not valid UTF-8: cni-chainer cannot open it' } : stateOf(root, c.file, plugin, config.maxConfigBytes)),
      }),
    );
  const chained = binary.present && reports.some((r) => r.loaded && r.state === 'chained');
  return { netDir: config.netDir, netDirExists: true, loaded, binary, chained, configs: reports };
}

/** A name as it is safe to print: control characters (a newline could forge report lines) escaped. */
export function printable(name: string): string {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f"\\]/.test(name) ? JSON.stringify(name) : name;
}

export function formatReport(report: NodeReport): string {
  if (!report.netDirExists) return `${report.netDir}: does not exist\nnot chained: no CNI config\n`;
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
  lines.push(`plugin binary ${report.binary.path}: ${report.binary.present ? 'present' : 'MISSING (every pod on a config that names it fails)'}`);
  if (report.loaded === undefined) lines.push('not chained: no config the runtime would load');
  else if (!report.binary.present) lines.push(`NOT chained: the runtime loads ${printable(report.loaded)}, but the plugin binary is missing`);
  else lines.push(`${report.chained ? 'chained' : 'NOT chained'}: the runtime loads ${printable(report.loaded)} (marked *)`);
  return `${lines.join('\n')}\n`;
}
