// The image the node runs, built from the unchanged Dockerfile on stand-in bases (test/image/).
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildah, BUILT, imageBuild, reason } from '../single-node.js';

describe.skipIf(reason !== undefined)('the image', () => {
  it('builds from the unchanged Dockerfile: Node 24, no compiler, no tests, no copy of the registry Node, a compile cache that is taken', () => {
    console.log(`image: ${imageBuild}`);
    expect(buildah.runIn(BUILT, ['node', '--version'])).toMatch(/^v24\./);
    buildah.inspectFiles(BUILT, (rootfs) => {
      for (const compiler of ['usr/bin/gcc', 'usr/bin/g++', 'usr/bin/cc', 'usr/bin/make']) expect(existsSync(path.join(rootfs, compiler)), compiler).toBe(false);
      expect(readdirSync(path.join(rootfs, 'app')).sort()).toEqual(['build', 'dist', 'node_modules', 'package.json']);
      expect(readdirSync(path.join(rootfs, 'app', 'node_modules')).filter((n) => n.startsWith('node-linux-'))).toEqual([]);
      expect(existsSync(path.join(rootfs, 'app', 'node_modules', '.bin', 'node'))).toBe(false);
      expect(existsSync(path.join(rootfs, 'app', 'test'))).toBe(false);
      expect(statSync(path.join(rootfs, 'opt', 'cni', 'bin', 'linkerd-cni')).mode & 0o111).not.toBe(0);
      expect(existsSync(path.join(rootfs, 'usr', 'lib', 'linkerd', 'linkerd-cni-repair-controller'))).toBe(true);
    });
    // The compile cache its build made is the one V8 takes where the image runs the agent.
    expect(buildah.runIn(BUILT, ['sh', '-c', 'NODE_DEBUG_NATIVE=COMPILE_CACHE node dist/cni-chainer.mjs --version 2>&1'])).toMatch(/V8 code cache for ESM file:\/\/\/app\/dist\/cni-chainer\.mjs was accepted/);
  });
});
