import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { JsonObject } from '../../src/cni/json.js';
import { repoRoot } from './addon-path.js';

// A copy of ../shared/fixtures: real configs as Calico, Cilium, Flannel, AWS VPC CNI, containerd and
// Multus write them, and linkerd-cni's plugin config.
export const fixturesDir = path.join(repoRoot, 'test', 'fixtures');
export const pluginFile = path.join(fixturesDir, 'plugin', 'linkerd-cni.json');
export const pluginText = readFileSync(pluginFile, 'utf8');

export function fixture(name: string): string {
  return readFileSync(path.join(fixturesDir, 'conflists', name), 'utf8');
}

export const fixtureNames = readdirSync(path.join(fixturesDir, 'conflists')).sort();

/** The plugin as the daemon chains it with the default env (placeholder substituted). */
export function expectedPlugin(netDir = '/etc/cni/net.d', kubeconfig = 'ZZZ-linkerd-cni-kubeconfig'): JsonObject {
  return JSON.parse(pluginText.replaceAll('__KUBECONFIG_FILEPATH__', `${netDir}/${kubeconfig}`)) as JsonObject;
}
