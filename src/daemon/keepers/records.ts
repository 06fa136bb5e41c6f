// What the in-place keeper remembers between passes (docs/design.md, Events): one record per file on
// disk that it wrote, and one per config name that has something pending. Two key spaces, because a
// config name in net.d and the file a pass writes differ for symlinks (the target) and Multus
// delegates (the delegate's path). The fight rule's own per-file state stays in fight-detector.ts.

/** A file the keeper wrote: a config in net.d, a symlink's target, a meta-plugin's delegate. */
export interface FileRecord {
  /**
   * What we last did there: wrote these bytes (their sha256), so a pass that reads them back is our
   * own write's event; or converted the `.conf` to a conflist and removed it, so its re-creation is
   * a revert.
   */
  ours: { kind: 'wrote'; sha256: string } | { kind: 'converted' };
  /** A conflist we made from a `.conf`: ours to rewrite when the primary re-creates the `.conf`. */
  madeFromConf: boolean;
}

/** A config name with something pending: a problem already logged, a pass to time, a retry. */
export interface ConfigRecord {
  /** The problem last logged (`status: detail`): the same one is not logged again. */
  loggedProblem: string | undefined;
  /** When the first event of the pending pass arrived (hrtime), for the patch latency metric. */
  firstEvent: bigint | undefined;
  retryTimer: NodeJS.Timeout | undefined;
}

export class Records {
  private readonly files = new Map<string, FileRecord>();
  private readonly configs = new Map<string, ConfigRecord>();

  file(key: string): FileRecord | undefined {
    return this.files.get(key);
  }

  /** We wrote `sha256` to `key` (`madeFromConf`: a conversion's conflist). */
  wrote(key: string, sha256: string, madeFromConf = false): void {
    const record = this.files.get(key);
    if (record === undefined) this.files.set(key, { ours: { kind: 'wrote', sha256 }, madeFromConf });
    else {
      record.ours = { kind: 'wrote', sha256 };
      record.madeFromConf ||= madeFromConf;
    }
  }

  /** We converted the `.conf` at `key` and removed it. */
  converted(key: string): void {
    this.files.set(key, { ours: { kind: 'converted' }, madeFromConf: false });
  }

  /** True when the last thing we wrote to `key` is `sha256`. */
  holdsOurWrite(key: string, sha256: string): boolean {
    const ours = this.files.get(key)?.ours;
    return ours?.kind === 'wrote' && ours.sha256 === sha256;
  }

  dropFile(key: string): void {
    this.files.delete(key);
  }

  config(name: string): ConfigRecord {
    let record = this.configs.get(name);
    if (record === undefined) {
      record = { loggedProblem: undefined, firstEvent: undefined, retryTimer: undefined };
      this.configs.set(name, record);
    }
    return record;
  }

  peekConfig(name: string): ConfigRecord | undefined {
    return this.configs.get(name);
  }

  /** Drops what is kept for `name`, but a pending retry: that pass still runs, and finds it gone. */
  dropConfig(name: string): void {
    const record = this.configs.get(name);
    if (record === undefined) return;
    record.loggedProblem = undefined;
    record.firstEvent = undefined;
    this.tidy(name, record);
  }

  /** A record with nothing left in it goes: a storm of passes must not leave one per name behind. */
  tidy(name: string, record: ConfigRecord): void {
    if (record.loggedProblem === undefined && record.firstEvent === undefined && record.retryTimer === undefined) this.configs.delete(name);
  }

  /** Stop: no retry fires any more. */
  cancelRetries(): void {
    for (const [name, record] of this.configs) {
      clearTimeout(record.retryTimer);
      record.retryTimer = undefined;
      this.tidy(name, record);
    }
  }
}
