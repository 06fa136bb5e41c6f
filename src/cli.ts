#!/usr/bin/env node
// Entry point: argument parsing and exit codes. 0 ok, 1 failure (or `check`: not chained), 2 bad usage
// or configuration.
import { ConfigError, loadConfig, requirePlugin, type Config } from './config.js';
import { HostRoot } from './fs/host-root.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';

const USAGE = `Usage: cni-chainer [run | uninstall | check [--json]] [--help] [--version]

  run        (default) install the plugin binaries and kubeconfig, chain the plugin into every CNI
             config and keep it there; on SIGTERM/SIGINT remove it all again
  uninstall  remove the plugin from every CNI config, delete the kubeconfig and binaries, exit
  check      report the node's CNI configs; exit 0 when the one the runtime loads is chained

Configuration comes from the environment (CONTAINER_MOUNT_PREFIX, DEST_CNI_NET_DIR,
CNI_NETWORK_CONFIG, ...): see DESIGN.md §1 in the repository.
`;

const SHUTDOWN_DEADLINE_MS = 1_800;

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

async function run(config: Config): Promise<number> {
  const plugin = requirePlugin(config);
  const log = createLogger(config.logLevel);
  const [{ Daemon }, { Metrics }, { HealthServer }] = await Promise.all([
    import('./daemon/daemon.js'),
    import('./daemon/metrics.js'),
    import('./daemon/health-server.js'),
  ]);
  const metrics = new Metrics(VERSION, config.backend);
  const daemon = new Daemon(config, plugin, log, metrics);
  log.info({ version: VERSION, instance: daemon.instance, backend: config.backend, netDir: config.netDir, hostRoot: config.hostRoot }, 'starting');

  let health: InstanceType<typeof HealthServer> | undefined;
  if (config.healthPort !== 0) {
    health = new HealthServer({ alive: () => daemon.watching, readiness: () => daemon.readiness.report() }, metrics);
    const port = await health.listen(config.healthPort);
    log.info({ port }, 'health server listening');
  }

  const stopped = new Promise<number>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      log.info({ signal }, 'stopping');
      // Kubelet kills us after the grace period anyway; make the outcome explicit before that.
      setTimeout(() => {
        log.error('cleanup did not finish in time');
        resolve(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      void daemon
        .stop()
        .then(async ({ cleaned, unpatched }) => {
          await health?.close();
          log.info({ cleaned, unpatched: unpatched.length }, 'stopped');
          resolve(0);
        })
        .catch((err: unknown) => {
          log.error({ err: (err as Error).message }, 'cleanup failed');
          resolve(1);
        });
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });

  try {
    await daemon.start();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const e = err as NodeJS.ErrnoException;
    // inotify limits and other start-up failures: never pretend to be running.
    log.fatal({ code: e.code, err: e.message }, 'start-up failed');
    await health?.close();
    return 1;
  }
  daemon.updateReadiness();
  log.info({ ready: daemon.readiness.report().ready }, 'started');
  return stopped;
}

async function uninstall(config: Config): Promise<number> {
  const plugin = requirePlugin(config);
  const log = createLogger(config.logLevel);
  const [{ unpatchNode }, { removeBinaries, binaryNames }, { KubeconfigFile }, { Ownership }] = await Promise.all([
    import('./daemon/unpatch-node.js'),
    import('./daemon/binaries.js'),
    import('./kube/kubeconfig-file.js'),
    import('./daemon/ownership.js'),
  ]);
  const root = new HostRoot(config.hostRoot);
  const netDirOnDisk = root.dirOnDisk(config.netDir);
  const unpatched = await unpatchNode(root, config.netDir, config.suffixes, plugin.type as string, log);
  const kubeconfigRemoved = new KubeconfigFile(config, `${netDirOnDisk}/${config.kubeconfigName}`).remove();
  let binaries: string[] = [];
  try {
    binaries = removeBinaries(root.toDisk(config.binDir), binaryNames(config.containerBinDir));
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot list the plugin binaries to remove');
  }
  new Ownership(netDirOnDisk).remove();
  log.info({ unpatched, kubeconfigRemoved, binaries }, 'uninstalled');
  return 0;
}

async function check(config: Config, json: boolean): Promise<number> {
  const plugin = requirePlugin(config);
  const { inspectNode, formatReport } = await import('./daemon/check.js');
  const report = inspectNode(new HostRoot(config.hostRoot), config.netDir, config.suffixes, plugin);
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`cni-chainer: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
