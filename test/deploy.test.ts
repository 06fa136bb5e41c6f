// The container image and the DaemonSet manifest, checked without a Docker engine or a cluster.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ENV_NAMES, loadConfig } from '../src/config.js';
import { repoRoot } from './helpers/addon-path.js';
import { fixture } from './helpers/fixtures.js';
import { NodeHost } from './helpers/node-host.js';
import { waitFor } from './helpers/wait.js';

const dockerfile = readFileSync(path.join(repoRoot, 'Dockerfile'), 'utf8');

/** Instructions of the Dockerfile, continuation lines joined, comments dropped. */
function instructions(): Array<{ op: string; args: string }> {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  it('copies only sources that exist in the repository', () => {
    const copies = instructions().filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      for (const source of parts.slice(0, -1)) expect(existsSync(path.join(repoRoot, source)), source).toBe(true);
    }
  });

  it('builds and runs on Node 24 LTS, the major this test suite runs on', () => {
    const froms = instructions().filter((i) => i.op === 'FROM').map((i) => i.args);
    expect(froms).toContain('node:24-bookworm AS build');
    expect(froms.at(-1)).toBe('node:24-bookworm-slim');
    // The suite must exercise the runtime the image ships (DESIGN §6), not the machine's own Node.
    expect(process.versions.node.split('.')[0]).toBe('24');
    expect(instructions().find((i) => i.op === 'RUN' && i.args.includes('npm ci'))?.args).toContain('npm prune --omit=dev');
  });

  it("copies into the image everything its CMD needs, and the CMD runs the agent", async () => {
    const cmd = JSON.parse(instructions().find((i) => i.op === 'CMD')!.args) as string[];
    expect(cmd).toEqual(['node', 'dist/src/cli.js', 'run']);
    const copied = instructions().filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build')).map((i) => i.args.split(/\s+/)[2]);
    for (const needed of ['./package.json', './node_modules', './build/Release/inotify.node', './dist/src']) expect(copied).toContain(needed);
    // The CMD itself, from the repository root (the image's /app has the same layout).
    const host = new NodeHost();
    host.put('10-flannel.conflist', fixture('10-flannel.conflist'));
    const daemon = host.start({}, cmd.slice(2));
    expect(daemon.child.spawnargs.slice(1)).toEqual([path.join(repoRoot, cmd[1]!), ...cmd.slice(2)]);
    await daemon.waitLog('started');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });
});

describe('deploy/daemonset.yaml', () => {
  const docs = parseAllDocuments(readFileSync(path.join(repoRoot, 'deploy', 'daemonset.yaml'), 'utf8')).map((d) => d.toJS());
  const daemonSet = docs.find((d) => d.kind === 'DaemonSet');
  const configMap = docs.find((d) => d.kind === 'ConfigMap');
  const pod = daemonSet.spec.template.spec;
  const container = pod.containers[0];
  const env = container.env as Array<{ name: string; value?: string; valueFrom?: { configMapKeyRef: { name: string; key: string } } }>;

  it('sets only variables the config schema knows, with values it accepts', () => {
    for (const { name } of env) expect(ENV_NAMES, name).toContain(name);
    const resolved = Object.fromEntries(
      env.map((e) => [e.name, e.value ?? configMap.data[e.valueFrom!.configMapKeyRef.key]]),
    );
    const config = loadConfig(resolved);
    expect(config.plugin?.type).toBe('linkerd-cni');
    expect(config.healthPort).toBe(9190);
  });

  it('mounts the host dirs where CONTAINER_MOUNT_PREFIX + DEST_* say', () => {
    const value = (name: string) => env.find((e) => e.name === name)!.value!;
    const mounts = Object.fromEntries(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
    const hostPaths = Object.fromEntries(pod.volumes.map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]));
    for (const dest of ['DEST_CNI_NET_DIR', 'DEST_CNI_BIN_DIR']) {
      const volume = Object.keys(hostPaths).find((n) => hostPaths[n] === value(dest))!;
      expect(volume, dest).toBeDefined();
      expect(mounts[volume]).toBe(`${value('CONTAINER_MOUNT_PREFIX')}${value(dest)}`);
    }
  });

  it('probes the health port, tolerates every taint and rolls with a surge', () => {
    expect(container.ports[0].containerPort).toBe(9190);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.priorityClassName).toBe('system-node-critical');
    expect(daemonSet.spec.updateStrategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(2);
    expect(pod.serviceAccountName).toBe(docs.find((d) => d.kind === 'ServiceAccount').metadata.name);
  });

  it('is not privileged and keeps only the file capabilities', () => {
    expect(container.securityContext.privileged).toBeUndefined();
    expect(container.securityContext.allowPrivilegeEscalation).toBe(false);
    expect(container.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER'] });
  });
});
