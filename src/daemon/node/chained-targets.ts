// The files outside net.d this agent has chained (symlink targets, Multus delegates named by path),
// written down in net.d, so that a stop after a SIGKILL and restart, and `cni-chainer uninstall`,
// unchain them too: a link retargeted or a clusterNetwork changed since leaves no trace of them in
// net.d, and a delegate still chained after its binary is gone fails every pod ADD through Multus.
//
// Hidden, without a CNI extension: no runtime loads it. Written only when a new target is chained
// (rare: a node has a handful), never on a timer: every write in net.d makes the runtime reload.
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { readEntry } from '../../fs/bounded-read.js';
import { withDir, withDirSync } from '../../fs/dir.js';
import { errnoCode, isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';

export const CHAINED_TARGETS_FILE = '.cni-chainer.targets';
// A node has a few targets; whatever is in net.d is read with a bound.
const MAX_TARGETS = 256;
const MAX_BYTES = 64 << 10;

/** The host paths recorded in net.d; [] when there is no record or it is not ours to trust. */
export function readChainedTargets(root: HostRoot, netDir: string): string[] {
  try {
    return withDirSync(root.openDir(netDir), (dir) => {
      const read = readEntry(dir, CHAINED_TARGETS_FILE, MAX_BYTES);
      if (read.kind !== 'file') return [];
      const parsed: unknown = JSON.parse(read.bytes.toString('utf8'));
      if (!Array.isArray(parsed)) return [];
      // Host paths only: each is opened inside the host root (HostRoot), wherever it points.
      return parsed.filter((p): p is string => typeof p === 'string' && p.startsWith('/') && !p.includes('\0')).slice(0, MAX_TARGETS);
    });
  } catch {
    return [];
  }
}

/** Removes the record: every target in it was unchained. */
export function removeChainedTargets(root: HostRoot, netDir: string): void {
  try {
    withDirSync(root.openDir(netDir), (dir) => dir.unlinkExisting([CHAINED_TARGETS_FILE]));
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
}

/** The daemon's side: adds each newly chained target to the record, one write at a time. */
export class ChainedTargets {
  /** Read at the first target (most nodes have none, and start without the read). */
  private known: Set<string> | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly root: HostRoot,
    private readonly netDir: string,
    private readonly log: Logger,
  ) {}

  /** What this instance chained and recorded; teardown reads the record itself for the rest. */
  get all(): string[] {
    return [...(this.known ?? [])];
  }

  /** Records `hostPath`; the promise settles once the record is on disk (undefined: nothing to write). */
  add(hostPath: string): Promise<void> | undefined {
    // What an earlier instance recorded stays recorded until a teardown unchains it.
    const known = (this.known ??= new Set(readChainedTargets(this.root, this.netDir)));
    if (known.has(hostPath) || known.size >= MAX_TARGETS) return undefined;
    known.add(hostPath);
    const bytes = Buffer.from(`${JSON.stringify([...known], null, 1)}\n`);
    this.writing = this.writing.then(() =>
      withDir(this.root.openDir(this.netDir), (dir) => writeFileAtomic(dir, CHAINED_TARGETS_FILE, bytes, { mode: 0o600 })).then(
        () => {},
        (err: unknown) => this.log.warn({ file: CHAINED_TARGETS_FILE, code: errnoCode(err) }, 'cannot record a chained file outside net.d: an uninstall after a crash may miss it'),
      ),
    );
    return this.writing;
  }

  /** Waits for the record's last write. */
  drain(): Promise<void> {
    return this.writing;
  }
}
