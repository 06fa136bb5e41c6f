// The chained plugin's own binary on the host (docs/design.md, "Plugin binary"). A config is chained, or re-chained, only
// while `DEST_CNI_BIN_DIR/<type>` is there, executable, and the very copy installed from
// `CONTAINER_CNI_BIN_DIR`: containerd fails every pod's ADD on a config whose plugin binary is missing,
// and CRI-O skips such a config, so pods would start unmeshed while /readyz said ready.
//
// "The very copy" is the host file's identity as it was right after the install checked or wrote it:
// inode, size, mode, mtime and ctime. Any write, chmod, rename or replacement changes one of them
// (ctime moves with every inode change), so one lstat per event-loop turn tells, without a hash.
import { statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { withDirSync } from '../../fs/dir.js';
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

  constructor(
    private readonly root: HostRoot,
    private readonly binDir: string,
    private readonly containerBinDir: string,
    readonly type: string,
  ) {
    this.binDirOnDisk = root.toDisk(binDir);
  }

  private readonly binDirOnDisk: string;

  /** The host path of the binary, for messages. */
  get hostPath(): string {
    return path.posix.join(this.binDir, this.type);
  }

  /**
   * Records the host copy right after an install checked or wrote every binary. Returns why the
   * plugin's binary is not usable, or undefined when it is.
   */
  installedNow(): string | undefined {
    this.installed = undefined;
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
    return this.thisTurn.get(0, () => {
      if (this.installed === undefined) return this.installProblem;
      const host = this.lstatHost();
      if (host === undefined) return `${this.hostPath} is missing: nothing is chained until it is reinstalled`;
      if (!sameIdentity(identityOf(host), this.installed)) return `${this.hostPath} changed since it was installed: nothing is chained until it is reinstalled`;
      return undefined;
    });
  }

  private notInImage(): string {
    return `the plugin binary ${this.type} is not in CONTAINER_CNI_BIN_DIR (${this.containerBinDir}): nothing is chained (an image without the plugin?)`;
  }

  private lstatHost(): Stats | undefined {
    try {
      // The disk path only names the directory: given, it spares the userland lookup (an lstat per
      // component) on the way to the write of every turn; the kernel confines the open either way.
      return withDirSync(this.root.openDir(this.binDir, this.binDirOnDisk), (dir) => dir.lstat(this.type));
    } catch {
      return undefined;
    }
  }
}
