// Stand-ins for the base images the Dockerfile names, made on this machine: CI cannot pull from any
// registry, and the Dockerfile stays as operators build it.
// - `node:24-bookworm` and `node:24-bookworm-slim`: Debian bookworm (mmdebstrap) with the Node binary
//   the repo pins (the `node-linux-<arch>` package in node_modules) and, for the build stage, its
//   headers, npm at NPM_VERSION, python3, make and g++.
// - PLUGIN_IMAGE: a pass-through `linkerd-cni` plugin that records every call, and a placeholder
//   repair controller.
// What a build here needs that a real base would not, lives in the stand-in, never in the Dockerfile:
// the machine's CA bundle (the way to the npm registry goes through it) and node-gyp's `nodedir`
// pointing at the headers in the image (node-gyp would otherwise download them).
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../helpers/addon-path.js';
import { writeTestPlugin } from '../runtime/test-plugin.js';
import { Buildah, debianRootfs } from './buildah.js';

export const BUILD_BASE = 'docker.io/library/node:24-bookworm';
export const RUNTIME_BASE = 'docker.io/library/node:24-bookworm-slim';
export const PLUGIN_STANDIN = 'localhost/linkerd-cni-plugin-standin:test';
/** npm as Node 24's release line ships it (the registry's `npm` package). */
export const NPM_VERSION = '11.19.1';

const nodePackage = path.join(repoRoot, 'node_modules', `node-linux-${process.arch}`);
const MACHINE_CA = '/etc/ssl/certs/ca-certificates.crt';

/** The stand-in bases, built into `buildah`'s storage. */
export function buildBases(buildah: Buildah): void {
  const work = path.join(buildah.work, 'bases');
  mkdirSync(work, { recursive: true });
  if (!existsSync(path.join(nodePackage, 'bin', 'node'))) throw new Error(`${nodePackage} is missing: run npm ci`);
  const slimRootfs = path.join(work, 'slim.tar');
  const buildRootfs = path.join(work, 'build.tar');
  debianRootfs(slimRootfs, []);
  debianRootfs(buildRootfs, ['ca-certificates', 'python3', 'make', 'g++']);
  execFileSync('npm', ['pack', `npm@${NPM_VERSION}`, '--pack-destination', work, '--silent'], { stdio: 'ignore' });
  mkdirSync(path.join(work, 'npm'), { recursive: true });
  execFileSync('tar', ['-xzf', path.join(work, `npm-${NPM_VERSION}.tgz`), '-C', path.join(work, 'npm')]);

  buildah.image(RUNTIME_BASE, (c) => {
    buildah.run(['add', c, slimRootfs, '/']);
    buildah.run(['copy', c, path.join(nodePackage, 'bin', 'node'), '/usr/local/bin/node']);
    buildah.run(['config', '--cmd', 'node', c]);
  });
  buildah.image(BUILD_BASE, (c) => {
    buildah.run(['add', c, buildRootfs, '/']);
    buildah.run(['copy', c, path.join(nodePackage, 'bin', 'node'), '/usr/local/bin/node']);
    buildah.run(['copy', c, path.join(nodePackage, 'include'), '/usr/local/include']);
    buildah.run(['copy', c, path.join(work, 'npm', 'package'), '/usr/local/lib/node_modules/npm']);
    buildah.run(['run', '--isolation', 'chroot', c, '--', 'ln', '-s', '../lib/node_modules/npm/bin/npm-cli.js', '/usr/local/bin/npm']);
    buildah.run(['copy', c, MACHINE_CA, '/usr/local/share/stand-in-ca.crt']);
    buildah.run([
      'config',
      '--env', 'NODE_EXTRA_CA_CERTS=/usr/local/share/stand-in-ca.crt',
      '--env', 'npm_config_cafile=/usr/local/share/stand-in-ca.crt',
      '--env', 'npm_config_nodedir=/usr/local',
      '--cmd', 'node',
      c,
    ]);
  });
}

/**
 * The PLUGIN_IMAGE stand-in: `/opt/cni/bin/linkerd-cni`, a chained plugin that passes prevResult on
 * and appends each call to `invocations` (a host path: containerd runs it on the host, with the
 * host's Node), and the repair controller's path holding a placeholder.
 */
export function buildPluginStandIn(buildah: Buildah, invocations: string, options: { getOwnPod?: boolean } = {}): void {
  const tree = path.join(buildah.work, 'plugin-tree');
  mkdirSync(path.join(tree, 'opt', 'cni', 'bin'), { recursive: true });
  mkdirSync(path.join(tree, 'usr', 'lib', 'linkerd'), { recursive: true });
  // The real-runtime suite's recording plugin, as the image's plugin binary.
  writeTestPlugin(path.join(tree, 'opt', 'cni', 'bin'), 'linkerd-cni', invocations, options);
  const repair = path.join(tree, 'usr', 'lib', 'linkerd', 'linkerd-cni-repair-controller');
  writeFileSync(repair, '#!/bin/sh\n# Stand-in for linkerd-cni-repair-controller: present, does nothing.\nexec sleep infinity\n');
  chmodSync(repair, 0o755);
  buildah.image(PLUGIN_STANDIN, (c) => buildah.run(['copy', c, `${tree}/`, '/']));
}

export const INSTALLER_STANDIN = 'localhost/linkerd-installer-standin:test';

/**
 * linkerd's own installer, for the switch between it and cni-chainer: the runtime base (Node), the
 * stand-in written from its documented behaviour (test/stand-ins/linkerd-install-cni.mjs), and the
 * PLUGIN_IMAGE stand-in's files at linkerd's cni-plugin image's paths. After buildPluginStandIn.
 */
export function buildInstallerStandIn(buildah: Buildah): void {
  buildah.image(INSTALLER_STANDIN, (c) => {
    buildah.run(['copy', c, `${path.join(buildah.work, 'plugin-tree')}/`, '/']);
    buildah.run(['copy', c, path.join(repoRoot, 'test', 'stand-ins', 'linkerd-install-cni.mjs'), '/usr/lib/linkerd/install-cni.mjs']);
    buildah.run(['config', '--cmd', '["node", "/usr/lib/linkerd/install-cni.mjs"]', c]);
  }, RUNTIME_BASE);
}

/** Builds the repo's Dockerfile, unchanged, against the stand-ins. */
export function buildAgentImage(buildah: Buildah, ref: string): void {
  buildah.run(['bud', '--quiet', '--isolation', 'chroot', '--pull=never', '--build-arg', `PLUGIN_IMAGE=${PLUGIN_STANDIN}`, '-f', path.join(repoRoot, 'Dockerfile'), '-t', ref, repoRoot]);
}
