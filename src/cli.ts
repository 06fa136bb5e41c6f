#!/usr/bin/env node
// Entry point: argument parsing and exit codes. 0 ok, 1 failure (or `check`: not chained), 2 bad usage
// or configuration.
import { statSync } from 'node:fs';
import { ConfigError, loadConfig, requirePlugin, type Config } from './config.js';
import { configWarnings } from './config-warnings.js';
import { HostRoot } from './fs/host-root.js';
import { exitNow } from './native/exit.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';

const USAGE = `Usage: cni-chainer [run | uninstall | check [--json]] [--help] [--version]

  run        (default) install the plugin binaries and kubeconfig, chain the plugin into every CNI
             config and keep it there; on SIGTERM/SIGINT remove it all again
  uninstall  remove the plugin from every CNI config, delete the kubeconfig and binaries, exit
  check      report the node's CNI configs; exit 0 when the one the runtime loads is chained

Configuration comes from the environment (CONTAINER_MOUNT_PREFIX, DEST_CNI_NET_DIR,
CNI_NETWORK_CONFIG, ...): see the README's "Configuration" and docs/design.md in the repository.
`;

class UsageError extends Error {}

interface Args {
  command: 'run' | 'uninstall' | 'check';
  json: boolean;
}

function parseArgs(argv: string[]): Args | 'help' | 'version' {
  let command: Args['command'] | undefined;
  let json = false;
  for (const arg of argv) {
    if (arg === '--help' || arg === '-h') return 'help';
    if (arg === '--version' || arg === '-v') return 'version';
    if (arg === '--json') json = true;
    else if ((arg === 'run' || arg === 'uninstall' || arg === 'check') && command === undefined) command = arg;
    else throw new UsageError(`unknown argument: ${arg}`);
  }
  if (json && command !== 'check') throw new UsageError('--json goes with check');
  return { command: command ?? 'run', json };
}

/** The container's binaries are copied to the host first of all: a missing dir is a configuration error. */
function requireContainerBinDir(config: Config): void {
  let isDir = false;
  try {
    isDir = statSync(config.containerBinDir).isDirectory();
  } catch (err) {
    throw new ConfigError([`CONTAINER_CNI_BIN_DIR: ${config.containerBinDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message} (the plugin binaries to install must be there)`]);
  }
  if (!isDir) throw new ConfigError([`CONTAINER_CNI_BIN_DIR: ${config.containerBinDir} is not a directory`]);
}

async function run(config: Config): Promise<number> {
  const plugin = requirePlugin(config);
  requireContainerBinDir(config);
  const log = createLogger(config.logLevel, config.logFormat);
  const [{ Daemon }, { Metrics }, { Probes, ProbePortError }] = await Promise.all([
    import('./daemon/lifecycle/daemon.js'),
    import('./daemon/shared/metrics.js'),
    import('./daemon/http/probes.js'),
  ]);
  const metrics = new Metrics(VERSION, config.backend);
  const daemon = new Daemon(config, plugin, log, metrics, new Probes(config, metrics, log));
  log.info({ version: VERSION, instance: daemon.instance, backend: config.backend, netDir: config.netDir, hostRoot: config.hostRoot }, 'starting');
  for (const warning of configWarnings(config)) log.warn(warning);

  // One stop, whatever signals arrive: the first starts the cleanup, the others are logged. The
  // deadline comes from SHUTDOWN_TIMEOUT_S, set below the pod's terminationGracePeriodSeconds.
  let stopping: Promise<number> | undefined;
  const stop = (signal: NodeJS.Signals): Promise<number> => {
    if (stopping !== undefined) {
      log.warn({ signal }, 'already stopping: the cleanup goes on');
      return stopping;
    }
    log.info({ signal }, 'stopping');
    stopping = new Promise<number>((resolve) => {
      setTimeout(() => {
        log.error({ timeoutS: config.shutdownTimeoutMs / 1000 }, 'cleanup did not finish within SHUTDOWN_TIMEOUT_S');
        resolve(1);
      }, config.shutdownTimeoutMs).unref();
      void daemon
        .stop()
        .then(({ cleaned, unpatched, failed }) => {
          if (failed.length > 0) {
            log.error({ files: failed }, 'stopped, but the plugin is still in these configs: binaries and kubeconfig kept');
            resolve(1);
            return;
          }
          log.info({ cleaned, unpatched: unpatched.length }, 'stopped');
          resolve(0);
        })
        .catch((err: unknown) => {
          log.error({ err: (err as Error).message, code: (err as NodeJS.ErrnoException).code }, 'cleanup failed');
          resolve(1);
        });
    });
    return stopping;
  };
  const signalled = new Promise<number>((resolve) => {
    process.on('SIGTERM', () => void stop('SIGTERM').then(resolve));
    process.on('SIGINT', () => void stop('SIGINT').then(resolve));
  });

  try {
    await daemon.start();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    if (stopping !== undefined) return stopping; // a signal during start: its cleanup decides
    const e = err as NodeJS.ErrnoException & { step?: string };
    if (e.cause instanceof ProbePortError) {
      // A port held by something else, or one this user may not bind: what the start did is undone
      // as at SIGTERM, and the variable is named. No node is left half-installed.
      const { cause } = e;
      process.stderr.write(`cni-chainer: ${cause.message}\n`);
      await daemon.stop();
      return cause.code === 'EADDRINUSE' || cause.code === 'EACCES' ? 2 : 1;
    }
    // inotify limits and other start-up failures: never pretend to be running.
    log.fatal({ step: e.step, code: e.code, err: e.message }, 'start-up failed');
    process.stderr.write(`cni-chainer: start-up failed${e.step === undefined ? '' : ` at step ${e.step}`}: ${e.message}\n`);
    return 1;
  }
  log.info({ ready: daemon.readiness.report().ready }, 'started');
  return signalled;
}

async function uninstall(config: Config): Promise<number> {
  const plugin = requirePlugin(config);
  const log = createLogger(config.logLevel, config.logFormat);
  const [{ teardown }, { binaryNames }, { Ownership }, { KubeconfigFile }, { Credentials }] = await Promise.all([
    import('./daemon/stop/teardown.js'),
    import('./daemon/node/binaries.js'),
    import('./daemon/lifecycle/ownership.js'),
    import('./kube/kubeconfig-file.js'),
    import('./kube/credentials.js'),
  ]);
  const root = new HostRoot(config.hostRoot);
  let binaries: string[] = [];
  try {
    binaries = binaryNames(config.containerBinDir);
  } catch (err) {
    // Uninstall still unchains every config: that is what keeps the node working.
    log.warn({ dir: config.containerBinDir, err: (err as Error).message }, 'cannot list the plugin binaries to remove');
  }
  const ownership = new Ownership(root, config.netDir);
  const result = await teardown(root, config, plugin.type, log, {
    binaries,
    releaseOwnership: () => ownership.remove(),
    // The kubeconfig goes back, should another installer chain the plugin again meanwhile.
    kubeconfig: new KubeconfigFile(config, root, new Credentials(config.serviceAccountDir, config.nodeName)),
  });
  if (result.failed.length > 0) {
    process.stderr.write(`cni-chainer: uninstall incomplete: the plugin is still in ${result.failed.map((f) => JSON.stringify(f)).join(', ')}\n`);
    return 1;
  }
  log.info({ unpatched: result.unpatched, kubeconfigRemoved: result.kubeconfigRemoved, binaries: result.binariesRemoved, keptFor: result.handedOver }, 'uninstalled');
  return 0;
}

async function check(config: Config, json: boolean): Promise<number> {
  const plugin = requirePlugin(config);
  const { inspectNode, formatReport } = await import('./daemon/node/check.js');
  const report = inspectNode(new HostRoot(config.hostRoot), config, plugin);
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.chained ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`cni-chainer: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  try {
    const config = loadConfig(process.env);
    if (args.command === 'check') return await check(config, args.json);
    if (args.command === 'uninstall') return await uninstall(config);
    return await run(config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const problem of err.problems) process.stderr.write(`cni-chainer: invalid configuration: ${problem}\n`);
    return 2;
  }
}

// Not process.exit(): it can hang forever in Node's teardown (native/exit_now.h). What was written to
// stdout and stderr is already out: on Linux, Node writes both synchronously to files, pipes and TTYs.
main(process.argv.slice(2)).then(
  (code) => exitNow(code),
  (err: unknown) => {
    process.stderr.write(`cni-chainer: ${(err as Error).stack ?? String(err)}\n`);
    exitNow(1);
  },
);
