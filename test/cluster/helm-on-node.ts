// Helm 4 (built beside Kubernetes: scripts/build-cluster.sh) against the node's API server, as an
// operator runs it: with the admin's kubeconfig, inside the node's namespaces, its caches and config
// in the suite's scratch directory.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { cp, dir } from './single-node.js';

/** `helm <args>` on the node; its output, or a thrown error with helm's words. */
export function helmOnNode(args: string[]): Promise<string> {
  const home = path.join(dir, 'helm-home');
  mkdirSync(home, { recursive: true });
  const env = { ...process.env, HELM_CACHE_HOME: path.join(home, 'cache'), HELM_CONFIG_HOME: path.join(home, 'config'), HELM_DATA_HOME: path.join(home, 'data') };
  const [command, ...rest] = [...cp.placement.prefix, path.join(cp.bin, 'helm'), '--kubeconfig', cp.adminKubeconfig, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(command!, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`helm ${args.join(' ')}: ${out}`))));
  });
}
