// Watches net.d by its *path* (docs/design.md, Start): net.d itself, and every directory on the way to it from the
// host root, both along the configured path and along the path its symlinks resolve to. An event in one
// of those ancestors that names the next component (`mv /etc/cni /etc/cni.old`, `mkdir -p
// /etc/cni/net.d`, a retargeted net.d link) re-resolves the path and re-arms within milliseconds; so
// does net.d's own IN_DELETE_SELF/IN_MOVE_SELF. While net.d does not exist (or is no directory inside
// the root), the ancestors that do exist are watched and the state says why it is not armed.
//
// The watch set is re-checked after it is in place: a level created between a failed lookup and the
// watch on its parent sends no event, so arm() resolves again until two lookups agree.
import { statSync } from 'node:fs';
import { errnoCode } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import type { Condition } from '../shared/readiness.js';
import type { WatchEventKind, Watcher } from '../../watch/watcher.js';

export type NetDirState =
  | { kind: 'unarmed' }
  | { kind: 'armed'; disk: string; inode: string }
  | { kind: 'waiting'; reason: string } // net.d does not resolve to a directory yet: ancestors watched
  | { kind: 'failed'; code: string; reason: string }; // a watch could not be created

/** What the kernel refused, with the knob an operator turns. */
export function watchFailureReason(code: string | undefined, dir: string): string {
  if (code === 'ENOSPC') return `cannot watch ${dir}: inotify watch limit reached (raise the sysctl fs.inotify.max_user_watches)`;
  if (code === 'EMFILE') return `cannot watch ${dir}: inotify instance limit reached (raise the sysctl fs.inotify.max_user_instances)`;
  return `cannot watch ${dir}: ${code ?? 'unknown error'}`;
}

export class WatchFailedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'WatchFailedError';
  }
}

interface Plan {
  /** Ancestor directory on disk → the entry names in it whose change re-arms. */
  ancestors: Map<string, Set<string>>;
  netDir?: { disk: string; inode: string };
  waitingReason?: string;
}

const MAX_ROUNDS = 16;

export class NetDirWatch {
  state: NetDirState = { kind: 'unarmed' };
  private ancestors = new Map<string, Set<string>>();
  private arming: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly root: HostRoot,
    private readonly netDir: string,
    private readonly watcher: Watcher,
    private readonly log: Logger,
    /** The `net-dir` readiness condition: this watch sets it and clears it. */
    private readonly condition: Condition,
    /** net.d is watched at a new path or inode: claim, sync and rescan. */
    private readonly onArmed: (disk: string) => Promise<void>,
    /** net.d is no longer watched (gone, or a watch failed). */
    private readonly onLost: (reason: string) => void,
  ) {}

  get disk(): string | undefined {
    return this.state.kind === 'armed' ? this.state.disk : undefined;
  }

  get armed(): boolean {
    return this.state.kind === 'armed';
  }

  /** True while the watch can see net.d appear or change: armed, or waiting on live ancestors. */
  get live(): boolean {
    return this.state.kind === 'armed' || this.state.kind === 'waiting';
  }

  /** Re-resolves and re-arms, serialised. Rejects with WatchFailedError when a watch cannot be created. */
  rearm(): Promise<void> {
    const next = this.arming.then(() => this.arm());
    this.arming = next.catch(() => {});
    return next;
  }

  /** True when the event (`kind` of `name` in `dir`) is about the path to net.d (and has been acted on). */
  onEvent(kind: WatchEventKind, dir: string, name: string): boolean {
    const names = this.ancestors.get(dir);
    if (names === undefined) return false;
    if (kind === 'dir-gone' || names.has(name)) void this.rearmLogged();
    return true;
  }

  /** net.d's own dir-gone (deleted, moved away, unmounted). */
  onNetDirGone(): void {
    void this.rearmLogged();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.arming;
    this.condition.clear();
  }

  private rearmLogged(): Promise<void> {
    return this.rearm().catch((err: unknown) => {
      // Not at start: a named status and a log line, never a crash (docs/design.md, Readiness).
      this.log.error({ code: errnoCode(err), err: (err as Error).message }, 'cannot watch the config directory');
    });
  }

  private plan(): Plan {
    const plan = this.fullPlan();
    if (!this.watcher.capabilities.recursive) return plan;
    // A recursive watch of the host root's ancestors would crawl the whole node. Only the deepest
    // existing level is watched while net.d is missing, and a replaced ancestor is found by the resync.
    if (plan.netDir !== undefined) return { ...plan, ancestors: new Map() };
    const deepest = [...plan.ancestors].sort(([a], [b]) => b.length - a.length)[0];
    return { ...plan, ancestors: new Map(deepest === undefined ? [] : [deepest]) };
  }

  private fullPlan(): Plan {
    const ancestors = new Map<string, Set<string>>();
    const addChain = (hostPath: string): void => {
      const parts = hostPath.split('/').filter((p) => p !== '');
      for (let i = 0; i < parts.length; i++) {
        const prefix = `/${parts.slice(0, i).join('/')}`;
        const resolved = this.root.resolve(prefix);
        if (!resolved.ok || resolved.kind !== 'dir') return;
        const disk = this.root.toDisk(resolved.path);
        const names = ancestors.get(disk) ?? new Set<string>();
        names.add(parts[i]!);
        ancestors.set(disk, names);
      }
    };
    addChain(this.netDir);
    const resolved = this.root.resolve(this.netDir);
    if (resolved.ok && resolved.path !== this.netDir) addChain(resolved.path);
    if (!resolved.ok) {
      addChain(resolved.path); // down to the first missing level
      return { ancestors, waitingReason: `${this.netDir} does not resolve inside the host root (${resolved.code} at ${resolved.path})` };
    }
    if (resolved.kind !== 'dir') return { ancestors, waitingReason: `${this.netDir} is not a directory` };
    const disk = this.root.toDisk(resolved.path);
    try {
      const st = statSync(disk);
      if (!st.isDirectory()) return { ancestors, waitingReason: `${this.netDir} is not a directory` };
      return { ancestors, netDir: { disk, inode: `${st.dev}:${st.ino}` } };
    } catch {
      return { ancestors, waitingReason: `${this.netDir} disappeared while resolving it` };
    }
  }

  private async arm(): Promise<void> {
    if (this.closed) return;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const plan = this.plan();
      await this.apply(plan);
      // Settled when a second lookup, made with every watch in place, sees the same thing.
      const again = this.plan();
      if (samePlan(plan, again)) return;
    }
  }

  private async apply(plan: Plan): Promise<void> {
    // Ancestors: start the new watches first, then drop the old ones.
    for (const dir of plan.ancestors.keys()) {
      if (this.ancestors.has(dir) && this.watcher.isWatching(dir)) continue;
      await this.watch(dir);
    }
    for (const dir of this.ancestors.keys()) {
      if (!plan.ancestors.has(dir) && dir !== plan.netDir?.disk) await this.watcher.unwatch(dir);
    }
    this.ancestors = plan.ancestors;

    const current = this.state.kind === 'armed' ? this.state : undefined;
    if (plan.netDir === undefined) {
      if (current !== undefined && !plan.ancestors.has(current.disk)) await this.watcher.unwatch(current.disk);
      const reason = plan.waitingReason ?? 'config directory missing';
      const was = this.state;
      this.state = { kind: 'waiting', reason };
      if (was.kind !== 'waiting' || was.reason !== reason) {
        if (was.kind === 'armed') this.log.warn({ dir: this.netDir, reason }, 'config directory is gone: following its path');
        else this.log.info({ dir: this.netDir, reason }, 'config directory not available: watching the path to it');
        this.condition.set(reason);
        this.onLost(reason);
      }
      return;
    }
    if (current !== undefined && current.disk === plan.netDir.disk && current.inode === plan.netDir.inode && this.watcher.isWatching(current.disk)) return;
    // A new path or a new directory at the same path (re-created): the old watch follows the old inode.
    if (current !== undefined) await this.watcher.unwatch(current.disk);
    await this.watch(plan.netDir.disk);
    this.state = { kind: 'armed', disk: plan.netDir.disk, inode: plan.netDir.inode };
    this.log.info({ dir: this.netDir, onDisk: this.root.fromDisk(plan.netDir.disk), backend: this.watcher.backend }, 'watching config directory');
    this.condition.clear();
    await this.onArmed(plan.netDir.disk);
  }

  private async watch(dir: string): Promise<void> {
    try {
      await this.watcher.watch(dir);
    } catch (err) {
      const code = errnoCode(err) ?? 'UNKNOWN';
      // Gone between the lookup and the watch: the next round sees it.
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      const reason = watchFailureReason(code, this.root.fromDisk(dir));
      this.state = { kind: 'failed', code, reason };
      this.condition.set(reason);
      this.onLost(reason);
      throw new WatchFailedError(code, reason);
    }
  }
}

function samePlan(a: Plan, b: Plan): boolean {
  if (a.netDir?.disk !== b.netDir?.disk || a.netDir?.inode !== b.netDir?.inode) return false;
  if (a.ancestors.size !== b.ancestors.size) return false;
  for (const dir of a.ancestors.keys()) if (!b.ancestors.has(dir)) return false;
  return true;
}
