// Keeps every config in net.d chained: one pass per config name, serialised and coalesced per name.
//
// A pass reads the config (through its symlink, resolved inside the host root), decides with the pure
// planner, and writes atomically only when something changes. What we wrote is remembered by hash, so
// a pass that finds our own write (the parcel backend has no rename cookies to tell) costs one read
// and no parse.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readlinkSync, unlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { planPatch } from '../cni/conflist.js';
import type { JsonObject } from '../cni/json.js';
import { conflistName, isConfigName, libcniOrder } from '../cni/names.js';
import { touchSymlink, unlinkIfUnchanged, writeFileAtomic } from '../fs/atomic-write.js';
import { isMissing } from '../fs/errno.js';
import type { HostRoot } from '../fs/host-root.js';
import type { Logger } from '../log.js';
import { CoalescingQueue } from './coalescing-queue.js';
import { DEFAULT_FIGHT_POLICY, FightDetector } from './fight-detector.js';
import type { Metrics } from './metrics.js';
import type { ConfigStatus, Readiness } from './readiness.js';
import { SymlinkTargets } from './symlink-targets.js';

export interface ReconcilerDeps {
  config: Config;
  plugin: JsonObject;
  root: HostRoot;
  log: Logger;
  metrics: Metrics;
  readiness: Readiness;
  /** False once the daemon stops or another instance owns the node: passes do nothing then. */
  isActive: () => boolean;
  /** Starts or stops watching a directory that holds symlink targets. */
  onTargetDir: (dir: string, used: boolean) => void;
  /** Called after every pass (readiness may have changed). */
  onPassDone?: () => void;
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

interface Source {
  /** The file to read and replace: the config itself, or its symlink's resolved target. */
  file: string;
  /** The symlink's text when the config is a symlink. */
  linkText?: string;
}

export class Reconciler {
  readonly netDirOnDisk: string;
  readonly targets: SymlinkTargets;
  private readonly fights = new FightDetector();
  private readonly queue: CoalescingQueue;
  private readonly lastWritten = new Map<string, string>(); // file on disk → sha256 of what we wrote
  private readonly revertCounted = new Set<string>(); // files whose current revert is already counted
  private readonly lastProblem = new Map<string, string>(); // config name → the problem last logged
  private readonly firstEvent = new Map<string, bigint>(); // config name → when its pending work began
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: ReconcilerDeps) {
    this.netDirOnDisk = deps.root.dirOnDisk(deps.config.netDir);
    this.targets = new SymlinkTargets(this.netDirOnDisk, deps.onTargetDir);
    this.queue = new CoalescingQueue(
      (name) => this.pass(name).finally(() => deps.onPassDone?.()),
      (name, error) => this.failed(name, error),
    );
  }

  /** Schedules a pass of config `name` (it starts now unless one is running). */
  trigger(name: string): void {
    if (!this.firstEvent.has(name)) this.firstEvent.set(name, process.hrtime.bigint());
    this.queue.trigger(name);
  }

  /** Lists net.d, forgets configs that are gone and triggers a pass of every config present. */
  scan(): number {
    let names: string[];
    try {
      names = readdirSync(this.netDirOnDisk);
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    const present = new Set(names.filter((n) => isConfigName(n, this.deps.config.suffixes)));
    for (const known of this.deps.readiness.names()) if (!present.has(known)) this.forget(known);
    for (const name of present) this.trigger(name);
    return present.size;
  }

  /** Waits for every running pass, including passes they trigger. */
  async drain(): Promise<void> {
    await this.queue.drain();
  }

  stop(): void {
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
  }

  forget(name: string): void {
    this.deps.readiness.delete(name);
    this.targets.remove(name);
    this.lastProblem.delete(name);
    this.firstEvent.delete(name);
  }

  private async pass(name: string): Promise<void> {
    const since = this.firstEvent.get(name) ?? process.hrtime.bigint();
    this.firstEvent.delete(name);
    if (!this.deps.isActive()) return;
    const { config, plugin, readiness } = this.deps;
    const configPath = path.join(this.netDirOnDisk, name);

    let link: Stats;
    try {
      link = lstatSync(configPath);
    } catch (err) {
      if (!isMissing(err)) throw err;
      this.forget(name);
      // The runtime may now load another file: in primary scope that one needs a look.
      if (config.scope === 'primary') this.scan();
      return;
    }
    if (config.scope === 'primary' && name !== this.primaryName()) {
      readiness.set(name, 'out-of-scope');
      return;
    }
    const source = this.source(name, link);
    if (source === undefined) return;

    let content: Buffer;
    let stat: Stats;
    try {
      const fd = openSync(source.file, 'r');
      try {
        stat = fstatSync(fd);
        content = readFileSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if (isMissing(err)) return; // removed meanwhile: its own event follows
      throw err;
    }
    const digest = sha256(content);
    if (this.lastWritten.get(source.file) === digest) {
      this.chained(name, source.file); // the event of our own write
      return;
    }

    const plan = planPatch(content.toString('utf8'), plugin);
    if (plan.action === 'invalid') {
      // Half-written or broken: leave it as it is; the write that completes it brings another event.
      if (this.problem(name, 'invalid', `${plan.reason} [sha256 ${digest.slice(0, 12)}]`)) this.deps.metrics.parseErrors.inc();
      return;
    }
    if (plan.action === 'none') {
      this.chained(name, source.file);
      return;
    }
    if (this.fightBackoff(name, source.file)) return;

    const owner = { mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid };
    const destName = conflistName(name);
    if (plan.upgraded && destName !== name) {
      await this.upgrade(name, destName, source, content, plan.text, owner);
      return;
    }
    const result = await writeFileAtomic(source.file, plan.text, { ...owner, expect: content });
    if (result === 'stale') {
      // A newer write landed while we patched: never overwrite it; look again.
      this.deps.metrics.staleWrites.inc();
      this.queue.trigger(name);
      return;
    }
    this.lastWritten.set(source.file, sha256(plan.text));
    this.revertCounted.delete(source.file);
    this.deps.metrics.patchLatency.observe(Number(process.hrtime.bigint() - since) / 1e9);
    this.deps.metrics.patches.inc();
    const target = source.linkText === undefined ? undefined : this.deps.root.fromDisk(source.file);
    this.deps.log.info({ file: name, target }, 'chained plugin into config');
    if (source.linkText !== undefined && path.dirname(source.file) !== this.netDirOnDisk) {
      // The runtime watches net.d only: re-create the link so it sees the change.
      touchSymlink(configPath, source.linkText);
    }
    this.chained(name, source.file);
    if (this.fights.isFighting(source.file)) this.retryLater(name, DEFAULT_FIGHT_POLICY.windowMs);
  }

  /** The file behind config `name`, or undefined (with its status set) when there is none to patch. */
  private source(name: string, link: Stats): Source | undefined {
    if (link.isFile()) {
      this.targets.remove(name);
      return { file: path.join(this.netDirOnDisk, name) };
    }
    if (!link.isSymbolicLink()) {
      this.targets.remove(name);
      this.problem(name, 'not-regular', 'not a regular file or symlink');
      return undefined;
    }
    const { root, config } = this.deps;
    const linkText = readlinkSync(path.join(this.netDirOnDisk, name));
    const resolved = root.resolve(path.posix.join(config.netDir, name));
    if (!resolved.ok) {
      if (resolved.code === 'ENOENT') {
        // Dangling: watch where the target would appear, and patch it when it does.
        this.targets.set(name, root.toDisk(resolved.path));
        this.problem(name, 'dangling', `symlink target ${resolved.path} does not exist`);
      } else {
        this.targets.remove(name);
        this.problem(name, resolved.code === 'ELOOP' ? 'loop' : 'dangling', `symlink cannot be resolved: ${resolved.code} at ${resolved.path}`);
      }
      return undefined;
    }
    const file = root.toDisk(resolved.path);
    this.targets.set(name, file);
    if (resolved.kind !== 'file') {
      this.problem(name, 'not-regular', `symlink target ${resolved.path} is not a regular file`);
      return undefined;
    }
    return { file, linkText };
  }

  /** A single-plugin `X.conf` becomes `X.conflist`; the `.conf` goes once the conflist is in place. */
  private async upgrade(
    name: string,
    destName: string,
    source: Source,
    content: Buffer,
    text: string,
    owner: { mode: number; uid: number; gid: number },
  ): Promise<void> {
    const configPath = path.join(this.netDirOnDisk, name);
    const dest = path.join(this.netDirOnDisk, destName);
    await writeFileAtomic(dest, text, owner);
    this.lastWritten.set(dest, sha256(text));
    let removed: boolean;
    if (source.linkText !== undefined) {
      // A symlinked .conf: drop the link, never its target (it belongs to whoever made the link).
      removed = readlinkSync(configPath) === source.linkText;
      if (removed) unlinkSync(configPath);
    } else {
      removed = await unlinkIfUnchanged(configPath, content);
    }
    this.deps.metrics.patches.inc();
    this.deps.log.info({ file: name, to: destName }, 'upgraded single-plugin config to a chained conflist');
    if (removed) this.forget(name);
    else this.queue.trigger(name); // rewritten meanwhile: convert the newer version
  }

  /**
   * Counts a revert of our patch (once per write of ours: a retry after the backoff sees the same
   * revert again); true when the file is in backoff and must not be written now.
   */
  private fightBackoff(name: string, file: string): boolean {
    if (!this.lastWritten.has(file) || this.revertCounted.has(file)) return this.backingOff(name, file);
    this.revertCounted.add(file);
    const verdict = this.fights.recordRevert(file);
    if (verdict.fightStarted) {
      this.deps.metrics.fights.inc();
      this.deps.log.warn(
        { file: name, backoffMs: verdict.backoffMs },
        'another writer keeps removing the plugin from this config (a primary CNI in exclusive mode, such as Cilium with cni.exclusive=true, or a restarting aws-node); backing off',
      );
    }
    return this.backingOff(name, file);
  }

  private backingOff(name: string, file: string): boolean {
    const left = this.fights.backoffLeft(file);
    if (left === 0) return false;
    this.deps.metrics.backoffs.inc();
    this.deps.readiness.set(name, 'backoff', `patch reverted repeatedly; next try in ${left} ms`);
    this.retryLater(name, left);
    return true;
  }

  private retryLater(name: string, ms: number): void {
    clearTimeout(this.retryTimers.get(name));
    const timer = setTimeout(() => {
      this.retryTimers.delete(name);
      this.trigger(name);
    }, ms);
    timer.unref();
    this.retryTimers.set(name, timer);
  }

  private chained(name: string, file: string): void {
    this.deps.readiness.set(name, 'chained');
    this.lastProblem.delete(name);
    this.fights.recordStable(file);
  }

  /** Sets a problem status; logs it only when it differs from the last one logged. True if new. */
  private problem(name: string, status: ConfigStatus, detail: string): boolean {
    this.deps.readiness.set(name, status, detail);
    const key = `${status}: ${detail}`;
    if (this.lastProblem.get(name) === key) return false;
    this.lastProblem.set(name, key);
    this.deps.log.warn({ file: name, status, detail }, 'config left unchanged');
    return true;
  }

  private failed(name: string, error: unknown): void {
    const err = error as NodeJS.ErrnoException;
    const code = err.code ?? 'UNKNOWN';
    this.deps.metrics.writeErrors.inc({ code });
    this.deps.readiness.set(name, 'error', `${code}: ${err.message}`);
    // The old file is still in place; the next event or resync tries again.
    this.deps.log.error({ file: name, code, path: err.path, err: err.message }, 'patching config failed');
  }

  private primaryName(): string | undefined {
    const names = readdirSync(this.netDirOnDisk).filter((n) => isConfigName(n, this.deps.config.suffixes));
    return libcniOrder(names)[0];
  }
}
