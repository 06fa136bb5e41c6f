// Spare patches for configs in net.d that the primary keeps rewriting (in-place mode).
//
// Each rewrite by the primary opens a window in which the runtime loads its unchained file, until our
// patch lands; the window's length is our write and, above all, our fsync of the temp file. Most such
// rewrites put back the very same bytes (a restarting CNI agent, a config manager). So for a file the
// primary has rewritten after our patch, the patched version of its current content is kept ready
// beside it: a complete, fsynced temp file. When the primary writes those same bytes again, the spare
// is swapped in at once, with no write and no fsync between the primary's rename and ours (the
// directory fsync follows, as for any write). A primary that writes new content gets the normal path.
//
// A spare's temp name carries the hash of the content it will replace, and its content unpatches to
// exactly that content, so the start-up sweep removes a spare a crash left behind like any unlanded
// patch.
import { createTemp } from '../../fs/stepwise-write.js';
import type { AtomicWriteOptions } from '../../fs/write-options.js';
import type { Dir } from '../../fs/dir.js';
import type { HostRoot } from '../../fs/host-root.js';

interface Spare {
  tmp: string;
  dirHost: string;
  dirDisk: string;
  /** sha256 of the content the spare is the patch of. */
  input: string;
  output: Buffer;
}

export class Spares {
  private readonly spares = new Map<string, Spare>();
  // The preparation under way per file, by a number unique in this process: one that finishes after
  // a newer one started, or after a drop, removes its own temp. Only files with a preparation under
  // way have an entry, so the map does not grow with every config name the node ever had.
  private readonly preparing = new Map<string, number>();
  private lastPreparation = 0;
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly root: HostRoot) {}

  /**
   * The spare's temp name when one is ready for exactly this content and this output (it is handed
   * over: the caller lands it); undefined otherwise.
   */
  take(fileKey: string, dir: Dir, inputDigest: string, output: Buffer): string | undefined {
    const spare = this.spares.get(fileKey);
    if (spare === undefined || spare.dirDisk !== dir.disk || spare.input !== inputDigest || !spare.output.equals(output)) return undefined;
    this.spares.delete(fileKey);
    return spare.tmp;
  }

  /**
   * Makes (or replaces) the spare of `name`: `output`, ready to replace `input`. In the background: its
   * fsync must not hold up the next pass of the file (the primary's next rewrite may come meanwhile,
   * and then takes the normal path).
   */
  prepareSoon(fileKey: string, dirHost: string, dirDisk: string, name: string, input: Buffer, inputDigest: string, output: Buffer, options: AtomicWriteOptions): void {
    this.drop(fileKey);
    const preparation = ++this.lastPreparation;
    this.preparing.set(fileKey, preparation);
    const job = (async () => {
      const dir = this.root.openDir(dirHost, dirDisk);
      try {
        const tmp = await createTemp(dir, name, output, { ...options, expect: input });
        if (this.preparing.get(fileKey) !== preparation) {
          dir.unlink(tmp); // superseded (a newer preparation, or a drop) while its fsync ran
          return;
        }
        this.spares.set(fileKey, { tmp, dirHost, dirDisk, input: inputDigest, output });
      } finally {
        dir.close();
      }
    })()
      .catch(() => {
        // A spare is an optimisation: a full or read-only disk just means the normal path next time.
      })
      .finally(() => {
        this.pending.delete(job);
        if (this.preparing.get(fileKey) === preparation) this.preparing.delete(fileKey);
      });
    this.pending.add(job);
  }

  /** Removes the spare of `fileKey` (the file is gone, or the agent stops). */
  drop(fileKey: string, openDir?: Dir): void {
    this.preparing.delete(fileKey);
    const spare = this.spares.get(fileKey);
    if (spare === undefined) return;
    this.spares.delete(fileKey);
    try {
      const dir = openDir !== undefined && openDir.disk === spare.dirDisk ? openDir : this.root.openDir(spare.dirHost, spare.dirDisk);
      try {
        dir.unlink(spare.tmp);
      } finally {
        if (dir !== openDir) dir.close();
      }
    } catch {
      // its directory is gone, or so is the spare: nothing is left behind either way
    }
  }

  /** Files with a spare or a preparation under way. */
  get size(): number {
    return this.spares.size + this.preparing.size;
  }

  /** Resolves once no preparation is under way. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Waits for preparations under way, then removes every spare. */
  async dispose(): Promise<void> {
    await this.settled();
    for (const fileKey of [...this.spares.keys()]) this.drop(fileKey);
  }
}
