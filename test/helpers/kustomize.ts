// `kustomize build` of deploy/<layout>, by the kubectl the cluster suite builds from the pinned
// Kubernetes module (scripts/build-cluster.sh; kustomize is built into it): the same kustomize on
// every machine, whatever its packages. The objects as plain JavaScript.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { clusterBinDir } from '../../bench/cluster/control-plane.js';
import { repoRoot } from './addon-path.js';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } } & Record<string, any>;

export function build(layout: string): K8sObject[] {
  const result = spawnSync(path.join(clusterBinDir(), 'kubectl'), ['kustomize', path.join(repoRoot, 'deploy', layout)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kustomize ${layout}: ${result.stderr}`);
  return parseYaml(result.stdout);
}

/** The objects of a multi-document YAML stream (empty documents dropped). */
export function parseYaml(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}
