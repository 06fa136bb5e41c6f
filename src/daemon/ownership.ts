// Which instance maintains the node. During a DaemonSet upgrade with maxSurge the old and the new pod
// run side by side; the newest writes its id into the owner file, and an instance that is no longer
// the owner neither patches nor cleans up, so the old pod's SIGTERM cannot undo the new pod's work.
// The file is hidden and has no CNI extension, so no runtime ever loads it.
import { randomUUID } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../fs/atomic-write.js';

export const OWNER_FILE_NAME = '.cni-chainer.owner';

export interface OwnerRecord {
  instance: string;
  pid: number;
  startedAt: string;
}

export class Ownership {
  readonly record: OwnerRecord = { instance: randomUUID(), pid: process.pid, startedAt: new Date().toISOString() };

  constructor(private readonly netDirOnDisk: string) {}

  get file(): string {
    return path.join(this.netDirOnDisk, OWNER_FILE_NAME);
  }

  /** The current owner's instance id; undefined when there is no (readable) owner file. */
  currentOwner(): string | undefined {
    try {
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as Partial<OwnerRecord>;
      return typeof parsed.instance === 'string' ? parsed.instance : undefined;
    } catch {
      return undefined;
    }
  }

  isOwner(): boolean {
    return this.currentOwner() === this.record.instance;
  }

  async claim(): Promise<void> {
    await writeFileAtomic(this.file, `${JSON.stringify(this.record)}\n`, { mode: 0o644 });
  }

  /** Removes the owner file if it is still ours. */
  release(): void {
    if (this.isOwner()) this.remove();
  }

  /** Removes the owner file whoever owns it (`uninstall`: the operator's explicit word). */
  remove(): void {
    try {
      unlinkSync(this.file);
    } catch {
      // gone already
    }
  }
}
