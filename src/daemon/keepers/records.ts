// What a keeper remembers between passes (docs/design.md, Events): one record per file on disk that it
// wrote, and one entry per config name it has a status for or something pending. Two key spaces,
// because a config name in net.d and the file a pass writes differ for symlinks (the target) and
// Multus delegates (the delegate's path). One record per file and one entry per name, each found by
// one lookup: a storm's pass used to look a new file up in five maps, and to add a config's pending
// event to a map only to delete it again (measured: docs/performance.md).
import type { FightState } from './fight-detector.js';

/**
 * A file the keeper wrote: a config in net.d, a symlink's target, a meta-plugin's delegate. Its fight
 * state (fight-detector.ts) lives in it: the fight rule only ever concerns files we wrote.
 */
export interface FileRecord extends FightState {
  /**
   * What we last did there: wrote bytes, so a pass that reads them back may be our own write's event;
   * or converted the `.conf` to a conflist and removed it, so its re-creation is a revert.
   */
  ours: 'wrote' | 'converted';
  /**
   * The sha256 of the bytes we last wrote, when kept (ConfigBook.wrote says when): a pass that reads
   * exactly these is our own write's event.
   */
  sha256: string | undefined;
  /** A conflist we made from a `.conf`: ours to rewrite when the primary re-creates the `.conf`. */
  madeFromConf: boolean;
}

/** A config name with a status on /readyz, or something pending: a problem logged, a pass to time, a retry. */
export interface ConfigEntry {
  /** The round its status was last set in (owned mode's sweep, ConfigBook.endRound); undefined: no status. */
  round: number | undefined;
  /** The problem last logged (`status: detail`): the same one is not logged again. */
  loggedProblem: string | undefined;
  /** When the first event of the pending pass arrived (hrtime), for the patch latency metric. */
  firstEvent: bigint | undefined;
  retryTimer: NodeJS.Timeout | undefined;
}

// One literal with every field, never a spread: every record has one hidden class, and V8 defines a
// spread's properties through its slow path (docs/performance.md). The fight fields (fight-detector.ts)
// start with no streak, no fight, and no write of ours yet.
function newFileRecord(ours: FileRecord['ours']): FileRecord {
  return { streak: 0, lastReactive: -Infinity, level: 0, until: 0, lastWrite: undefined, ours, sha256: undefined, madeFromConf: false };
}

export class Records {
  private readonly files = new Map<string, FileRecord>();
  private readonly configs = new Map<string, ConfigEntry>();

  file(key: string): FileRecord | undefined {
    return this.files.get(key);
  }

  /** We wrote bytes to `key` (`sha256`: theirs, when kept; `madeFromConf`: a conversion's conflist). */
  wrote(key: string, sha256: string | undefined, madeFromConf: boolean): FileRecord {
    const record = this.fileDoneBy(key, 'wrote');
    record.sha256 = sha256;
    record.madeFromConf ||= madeFromConf;
    return record;
  }

  /** We converted the `.conf` at `key` and removed it. */
  converted(key: string): FileRecord {
    const record = this.fileDoneBy(key, 'converted');
    record.sha256 = undefined;
    record.madeFromConf = false;
    return record;
  }

  /** The record of `key`, made when there is none, saying what we did there last. */
  private fileDoneBy(key: string, ours: FileRecord['ours']): FileRecord {
    let record = this.files.get(key);
    if (record === undefined) {
      record = newFileRecord(ours);
      this.files.set(key, record);
    } else {
      record.ours = ours;
    }
    return record;
  }

  dropFile(key: string): void {
    this.files.delete(key);
  }

  /** The entry of config `name`, made when it has none. */
  config(name: string): ConfigEntry {
    let entry = this.configs.get(name);
    if (entry === undefined) {
      entry = { round: undefined, loggedProblem: undefined, firstEvent: undefined, retryTimer: undefined };
      this.configs.set(name, entry);
    }
    return entry;
  }

  peekConfig(name: string): ConfigEntry | undefined {
    return this.configs.get(name);
  }

  /** Every config entry, by name. */
  configEntries(): IterableIterator<[string, ConfigEntry]> {
    return this.configs.entries();
  }

  /**
   * An entry with nothing left in it goes: a name that comes and goes must not leave one behind. One
   * with a status stays as long as the status: a storm's new config keeps the entry its first event
   * made, rather than losing it when its pass starts and making it again when its pass ends.
   */
  tidy(name: string, entry: ConfigEntry): void {
    if (entry.round === undefined && entry.loggedProblem === undefined && entry.firstEvent === undefined && entry.retryTimer === undefined) this.configs.delete(name);
  }

  /** Stop: no retry fires any more. */
  cancelRetries(): void {
    for (const [name, entry] of this.configs) {
      clearTimeout(entry.retryTimer);
      entry.retryTimer = undefined;
      this.tidy(name, entry);
    }
  }
}
