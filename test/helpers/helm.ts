// Helm 4, built from its Go module beside Kubernetes (scripts/build-cluster.sh), on the chart of this
// repository (charts/cni-chainer).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { clusterBinDir } from '../../bench/cluster/control-plane.js';
import { repoRoot } from './addon-path.js';
import { parseYaml, type K8sObject } from './kustomize.js';

export const CHART = path.join(repoRoot, 'charts', 'cni-chainer');
/** What `helm install` sees on an API server that serves ValidatingAdmissionPolicy (1.30 and later). */
export const WITH_POLICIES = ['--api-versions', 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy'];

/** Runs helm; its status, stdout and stderr. */
export function helm(args: string[], options: { env?: NodeJS.ProcessEnv } = {}): { status: number; stdout: string; stderr: string } {
  const result = spawnSync(path.join(clusterBinDir(), 'helm'), args, { encoding: 'utf8', env: { ...process.env, ...options.env }, maxBuffer: 64 << 20 });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** `helm template` of the chart as release linkerd2-cni in linkerd-cni: the objects, or a thrown error with helm's words. */
export function template(args: string[] = []): K8sObject[] {
  const result = helm(['template', 'linkerd2-cni', CHART, '--namespace', 'linkerd-cni', ...args]);
  if (result.status !== 0) throw new Error(result.stderr.trim());
  return parseYaml(result.stdout);
}
