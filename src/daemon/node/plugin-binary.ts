// The chained plugin's own binary on the host (docs/design.md, "Plugin binary"). A config is chained, or re-chained, only
// while `DEST_CNI_BIN_DIR/<type>` is there, executable, and the very copy installed from
// `CONTAINER_CNI_BIN_DIR`: containerd fails every pod's ADD on a config whose plugin binary is missing,
// and CRI-O skips such a config, so pods would start unmeshed while /readyz said ready.
//
// "The very copy" is the host file's identity as it was right after the install checked or wrote it:
// inode, size, mode, mtime and ctime. Any write, chmod, rename or replacement changes one of them
// (ctime moves with every inode change), so one lstat tells, without a hash.
//
// When to look: with a watch on the bin dir that reports metadata changes too, in one queue with net.d's
// events (WatcherCapabilities.orderedAttributes), a binary found as installed stays so until the bin
// dir's next event: each of those changes makes one (IN_ATTRIB for a chmod, chown or touch), and it is
// read before any config event queued after it. So a pass looks once after each such event, not on
// every write: the lstat's openat2 walk cost ~30 µs on a single change after a quiet spell (cold
// caches; docs/performance.md), a quarter of the agent's whole pass. Without such a watch (the parcel
// backend, a bin dir whose watch is gone), it looks once per event-loop turn.
import { statSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { HostRoot } from '../../fs/host-root.js';
import { TurnMemo } from '../../turn-memo.js';

interface Identity {
  ino: number;
  size: number;
  mode: number;
  mtimeMs: number;
  ctimeMs: number;
}

function identityOf(st: Stats): Identity {
  return { ino: st.ino, size: st.size, mode: st.mode, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

function sameIdentity(a: Identity, b: Identity): boolean {
  return a.ino === b.ino && a.size === b.size && a.mode === b.mode && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** How a host copy of a binary falls short of its source in the image, or undefined when it does not. */
export type BinaryShortfall = 'missing' | 'not-executable' | 'differs';

/**
 * The one comparison of a host binary with the image's copy, for the agent and for `check`: present
 * as a regular file, executable, and of the source's size and mode (the install copies both).
 */
export function binaryShortfall(source: Pick<Stats, 'size' | 'mode'> | undefined, host: Stats | undefined): BinaryShortfall | undefined {
  if (host === undefined || !host.isFile()) return 'missing';
  if ((host.mode & 0o111) === 0) return 'not-executable';
  if (source !== undefined && (source.size !== host.size || (source.mode & 0o7777) !== (host.mode & 0o7777))) return 'differs';
  return undefined;
}

export class PluginBinary {
  /** The host copy as the last install left it; undefined until an install put it in place. */
  private installed: Identity | undefined;
  /** Why the last install did not leave a usable binary. */
  private installProblem: string | undefined = 'the plugin binary is not installed yet';
  private readonly thisTurn = new TurnMemo<0, string | undefined>();
  /**
   * 'as-installed': found as installed while the bin dir was watched, with no event of the bin dir
   * since; 'look': lstat it at the next problem().
   */
  private known: 'look' | 'as-installed' = 'look';
  /** The host path of the binary. */
  readonly hostPath: string;

  constructor(
    private readonly root: HostRoot,
    binDir: string,
    private readonly containerBinDir: string,
    readonly type: string,
    /** The bin dir is watched with ordered attribute events (see above). */
    private readonly watched: () => boolean,
  ) {
    this.hostPath = path.posix.join(binDir, type);
  }

  /**
   * Records the host copy right after an install checked or wrote every binary. Returns why the
   * plugin's binary is not usable, or undefined when it is.
   */
  installedNow(): string | undefined {
    this.installed = undefined;
    this.known = 'look';
    this.thisTurn.forget(0);
    this.installProblem = this.inspect();
    return this.installProblem;
  }

  private inspect(): string | undefined {
    let source: Stats;
    try {
      source = statSync(path.join(this.containerBinDir, this.type));
    } catch {
      return this.notInImage();
    }
    if (!source.isFile()) return this.notInImage();
    const host = this.lstatHost();
    switch (binaryShortfall(source, host)) {
      case 'missing':
        return `${this.hostPath} is missing: nothing is chained until it is installed`;
      case 'not-executable':
        return `${this.hostPath} is not executable: nothing is chained until it is reinstalled`;
      case 'differs':
        return `${this.hostPath} is not the copy of CONTAINER_CNI_BIN_DIR's: nothing is chained until it is reinstalled`;
    }
    this.installed = identityOf(host!);
    return undefined;
  }

  /** Why nothing may be chained now (the binary is not the one installed), or undefined. */
  problem(): string | undefined {
    if (this.known === 'as-installed') return undefined;
    return this.thisTurn.get(0, () => {
      if (this.installed === undefined) return this.installProblem;
      // Asked before the lstat: a change made between the two brings an event, read after this.
      const watched = this.watched();
      const host = this.lstatHost();
      if (host === undefined) return `${this.hostPath} is missing: nothing is chained until it is reinstalled`;
      if (!sameIdentity(identityOf(host), this.installed)) return `${this.hostPath} changed since it was installed: nothing is chained until it is reinstalled`;
      if (watched) this.known = 'as-installed';
      return undefined;
    });
  }

  /** Something happened in the bin dir (or events were lost): the next problem() looks. */
  lookAgain(): void {
    this.known = 'look';
    this.thisTurn.forget(0);
  }

  private notInImage(): string {
    return `the plugin binary ${this.type} is not in CONTAINER_CNI_BIN_DIR (${this.containerBinDir}): nothing is chained (an image without the plugin?)`;
  }

  private lstatHost(): Stats | undefined {
    try {
      // One openat2 of the whole host path inside the root: a component swapped to a symlink means
      // what it means to the runtime on the host, never the container's path.
      return this.root.lstat(this.hostPath);
    } catch {
      return undefined;
    }
  }
}
