// One in-process config keeper on a scratch host root, for tests that drive passes themselves with a
// clock they move: real files, the real addon, the real keeper (in place or owned), its own readiness
// and metrics. The CLI's integration tests cover the same keepers as a child process.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { loadConfig, requirePlugin } from '../../src/config.js';
import type { ConfigKeeper } from '../../src/daemon/keepers/config-keeper.js';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { OwnedConfig } from '../../src/daemon/keepers/owned-config.js';
import { Readiness } from '../../src/daemon/shared/readiness.js';
import { Reconciler } from '../../src/daemon/keepers/reconciler.js';
import { PluginBinary } from '../../src/daemon/node/plugin-binary.js';
import { HostRoot } from '../../src/fs/host-root.js';
import { createLogger } from '../../src/log.js';
import { pluginText } from './fixtures.js';
import { tempDir } from './tmp.js';

export interface KeeperOnNode<K extends ConfigKeeper> {
  hostRoot: string;
  netDir: string;
  keeper: K;
  readiness: Readiness;
  metrics: Metrics;
  /** The keeper's clock (fight rule, memory of removed files), in ms: move it by hand. */
  clock: { now: number };
  /** One pass of `name` (owned mode: one sync), and whatever it triggers, to the end. */
  pass(name: string): Promise<void>;
}

function onNode<K extends ConfigKeeper>(make: (deps: ConstructorParameters<typeof Reconciler>[0], netDir: string) => K, env: NodeJS.ProcessEnv): KeeperOnNode<K> {
  const hostRoot = tempDir();
  const netDir = path.join(hostRoot, 'etc/cni/net.d');
  mkdirSync(netDir, { recursive: true });
  // The plugin's binary, installed: nothing is chained without it (plugin-binary.ts). The container's
  // copy is a scratch directory of its own (tempDir() is removed after each test).
  const containerBin = tempDir();
  mkdirSync(path.join(hostRoot, 'opt/cni/bin'), { recursive: true });
  for (const dir of [containerBin, path.join(hostRoot, 'opt/cni/bin')]) writeFileSync(path.join(dir, 'linkerd-cni'), '#!/bin/sh\n', { mode: 0o755 });
  const config = loadConfig({ CONTAINER_MOUNT_PREFIX: hostRoot, CNI_NETWORK_CONFIG: pluginText, CONTAINER_CNI_BIN_DIR: containerBin, ...env });
  const root = new HostRoot(hostRoot);
  const binary = new PluginBinary(root, config.binDir, config.containerBinDir, requirePlugin(config).type, () => false);
  expect(binary.installedNow()).toBeUndefined();
  const readiness = new Readiness();
  const metrics = new Metrics('test', 'native');
  const clock = { now: 0 };
  const deps = { config, plugin: requirePlugin(config), root, log: createLogger('silent'), metrics, readiness, binary, isActive: () => true, onTargetDir: () => {}, now: () => clock.now };
  const keeper = make(deps, netDir);
  const pass = async (name: string) => {
    keeper.trigger(name);
    await keeper.drain();
  };
  return { hostRoot, netDir, keeper, readiness, metrics, clock, pass };
}

/** The in-place keeper (CNI_PATCH_MODE=in-place). */
export function reconcilerOnNode(env: NodeJS.ProcessEnv = {}): KeeperOnNode<Reconciler> {
  return onNode((deps, netDir) => new Reconciler(deps, netDir), env);
}

/** Owned mode's keeper. */
export function ownedConfigOnNode(env: NodeJS.ProcessEnv = {}): KeeperOnNode<OwnedConfig> {
  return onNode((deps, netDir) => new OwnedConfig(deps, netDir), { CNI_PATCH_MODE: 'owned', ...env });
}
