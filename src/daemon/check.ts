// `cni-chainer check`: a read-only report of the node's CNI configs.
import { readFileSync } from 'node:fs';
import { ConfigParseError, holdsPluginType, isChained, parseConfig } from '../cni/conflist.js';
import type { JsonObject } from '../cni/json.js';
import { compareNames, libcniOrder } from '../cni/names.js';
import type { HostRoot } from '../fs/host-root.js';
import { listNodeConfigs } from './node-configs.js';

export type ConfigState = 'chained' | 'not-chained' | 'stale-plugin' | 'invalid' | 'unresolved';

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
  /** True when the loaded config is chained: `check` exits 0 only then. */
  chained: boolean;
  configs: ConfigReport[];
}

function stateOf(file: string | undefined, plugin: JsonObject): { state: ConfigState; detail?: string } {
  if (file === undefined) return { state: 'unresolved' };
  try {
    const config = parseConfig(readFileSync(file, 'utf8'));
    if (isChained(config, plugin)) return { state: 'chained' };
    if (holdsPluginType(config, plugin.type as string)) return { state: 'stale-plugin', detail: 'holds the plugin, but not as configured or not last' };
    return { state: 'not-chained' };
  } catch (err) {
    if (err instanceof ConfigParseError) return { state: 'invalid', detail: err.message };
    return { state: 'unresolved', detail: (err as Error).message };
  }
}

export function inspectNode(root: HostRoot, netDir: string, suffixes: readonly string[], plugin: JsonObject): NodeReport {
  const configs = listNodeConfigs(root, netDir, suffixes);
  if (configs === undefined) return { netDir, netDirExists: false, chained: false, configs: [] };
  const loaded = libcniOrder(configs.filter((c) => c.file !== undefined).map((c) => c.name))[0];
  const reports = configs
    .sort((a, b) => compareNames(a.name, b.name))
    .map((c): ConfigReport => ({ name: c.name, loaded: c.name === loaded, symlink: c.symlink, ...stateOf(c.file, plugin) }));
  const chained = reports.some((r) => r.loaded && r.state === 'chained');
  return { netDir, netDirExists: true, loaded, chained, configs: reports };
}

export function formatReport(report: NodeReport): string {
  if (!report.netDirExists) return `${report.netDir}: does not exist\nnot chained: no CNI config\n`;
  const lines = [`${report.netDir}:`];
  if (report.configs.length === 0) lines.push('  (no CNI config)');
  for (const c of report.configs) {
    let line = `  ${c.loaded ? '*' : ' '} ${c.name}  ${c.state}`;
    if (c.symlink !== undefined) line += `  -> ${c.symlink.text}${c.symlink.target !== undefined ? ` (${c.symlink.target})` : ` [${c.symlink.error}]`}`;
    if (c.detail !== undefined) line += `  (${c.detail})`;
    lines.push(line);
  }
  lines.push(report.loaded === undefined ? 'not chained: no config the runtime would load' : `${report.chained ? 'chained' : 'NOT chained'}: the runtime loads ${report.loaded} (marked *)`);
  return `${lines.join('\n')}\n`;
}
