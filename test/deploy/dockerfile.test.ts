// The container image, checked without a Docker engine (the node suite builds and runs it:
// test/cluster/scenarios/image.ts).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/addon-path.js';
import { fixture } from '../helpers/fixtures.js';
import { NodeHost } from '../helpers/node-host.js';
import { tempDir } from '../helpers/tmp.js';
import { waitFor } from '../helpers/wait.js';

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

/** What the runtime stage copies from the build stage: [source, destination] of each COPY. */
function copiesFromBuild(): string[][] {
  return instructions()
    .filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build'))
    .map((i) => i.args.split(/\s+/).slice(1));
}

describe('Dockerfile', () => {
  it("carries what linkerd2-cni's chart runs from the same image", () => {
    const fromPlugin = instructions().filter((i) => i.op === 'COPY' && i.args.startsWith('--from=plugin')).map((i) => i.args.split(/\s+/)[2]);
    expect(fromPlugin).toEqual(['/opt/cni/bin/linkerd-cni', '/usr/lib/linkerd/linkerd-cni-repair-controller']);
    // The chart's preStop hook is `/bin/sh -c "kill -15 1; sleep 15s"`: the runtime image needs a shell.
    expect(instructions().filter((i) => i.op === 'FROM').at(-1)!.args).not.toMatch(/distroless/);
  });

  it('copies only sources that exist in the repository', () => {
    const copies = instructions().filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      for (const source of parts.slice(0, -1)) expect(existsSync(path.join(repoRoot, source)), source).toBe(true);
    }
  });

  it('builds and runs on Node 24 LTS, the major this test suite runs on, and labels the image', () => {
    const froms = instructions().filter((i) => i.op === 'FROM').map((i) => i.args);
    expect(froms).toContain('node:24-bookworm AS build');
    expect(froms.at(-1)).toBe('node:24-bookworm-slim');
    // The suite must exercise the runtime the image ships (docs/design.md, Tests), not the machine's own Node.
    expect(process.versions.node.split('.')[0]).toBe('24');
    const build = instructions().find((i) => i.op === 'RUN' && i.args.includes('npm ci'))?.args;
    expect(build).toContain('npm prune --omit=dev');
    // The registry's Node (an optional dependency for the tests) must not ship: the image has its own.
    expect(build).toContain('rm -rf node_modules/node-linux-*');
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
    for (const version of Object.values(pkg.optionalDependencies)) expect(version.split('.')[0]).toBe('24');
    const labels = instructions().filter((i) => i.op === 'LABEL').map((i) => i.args).join(' ');
    for (const key of ['title', 'description', 'version', 'licenses']) expect(labels).toContain(`org.opencontainers.image.${key}=`);
  });

  it("copies into the image everything its CMD needs, and the CMD runs the agent", async () => {
    const cmd = JSON.parse(instructions().find((i) => i.op === 'CMD')!.args) as string[];
    expect(cmd).toEqual(['node', 'dist/cni-chainer.mjs', 'run']);
    const copied = copiesFromBuild().map(([, destination]) => destination);
    for (const needed of ['./package.json', './node_modules', './build/Release/cni_chainer.node', './dist/cni-chainer.mjs']) expect(copied).toContain(needed);
    // Files the bundle itself loads by a relative path (the Prometheus exposition, at the first scrape).
    const bundled = readFileSync(path.join(repoRoot, 'dist', 'cni-chainer.mjs'), 'latin1');
    const loaded = [...bundled.matchAll(/import\("(\.\/[^"]+)"\)/g)].map((m) => `./dist/${m[1]!.slice(2)}`);
    expect(loaded).toContain('./dist/cni-chainer-prometheus.mjs');
    for (const needed of loaded) expect(copied).toContain(needed);
    // The bundle needs no package but @parcel/watcher at run time: everything else is inside it.
    expect(Object.keys((JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { dependencies: object }).dependencies)).toEqual(['@parcel/watcher']);
    // The CMD itself, from the repository root (the image's /app has the same layout).
    const host = new NodeHost();
    host.put('10-flannel.conflist', fixture('10-flannel.conflist'));
    const daemon = host.start({}, cmd.slice(2));
    expect(daemon.child.spawnargs.slice(1)).toEqual([path.join(repoRoot, cmd[1]!), ...cmd.slice(2)]);
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('ships the compile cache the build made, and points Node at it where the image puts it', () => {
    const env = Object.fromEntries(
      instructions()
        .filter((i) => i.op === 'ENV')
        .flatMap((i) => i.args.split(/\s+/).map((kv) => kv.split('=') as [string, string])),
    );
    expect(env.NODE_COMPILE_CACHE).toBe('/app/dist/compile-cache');
    expect(env.NODE_COMPILE_CACHE_PORTABLE).toBe('1');
    expect(copiesFromBuild()).toContainEqual(['/src/dist/compile-cache', './dist/compile-cache']);
    // The build's cache, moved as the image moves it (/src to /app): V8 takes it for the bundle.
    const app = tempDir('image-app-');
    cpSync(path.join(repoRoot, 'dist', 'cni-chainer.mjs'), path.join(app, 'dist', 'cni-chainer.mjs'));
    cpSync(path.join(repoRoot, 'dist', 'compile-cache'), path.join(app, 'dist', 'compile-cache'), { recursive: true });
    cpSync(path.join(repoRoot, 'build', 'Release', 'cni_chainer.node'), path.join(app, 'build', 'Release', 'cni_chainer.node'));
    const run = spawnSync(process.execPath, [path.join(app, 'dist', 'cni-chainer.mjs'), '--version'], {
      env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: path.join(app, 'dist', 'compile-cache'), NODE_COMPILE_CACHE_PORTABLE: '1', NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/V8 code cache for ESM file:\/\/\S+\/dist\/cni-chainer\.mjs was accepted/);
  });
});
