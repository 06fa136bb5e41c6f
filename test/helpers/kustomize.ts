// `kustomize build` of deploy/<layout>: Debian's kustomize where the release has one, else kubectl's
// built-in one. The objects as plain JavaScript.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from './addon-path.js';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<string, any>;

export const kustomize: string[] | undefined = [['kustomize', 'build'], ['kubectl', 'kustomize']].find(
  ([bin]) => spawnSync(bin!, bin === 'kubectl' ? ['version', '--client'] : ['version']).status === 0,
);

export function build(layout: string): K8sObject[] {
  if (kustomize === undefined) throw new Error('neither kustomize nor kubectl is installed (.ci/run installs them)');
  const result = spawnSync(kustomize[0]!, [kustomize[1]!, path.join(repoRoot, 'deploy', layout)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kustomize ${layout}: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject);
}
