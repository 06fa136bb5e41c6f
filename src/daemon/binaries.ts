// The plugin binaries go into the host's CNI bin dir before any config names them: CRI-O skips a
// config whose plugin binary is missing, and containerd fails every new pod on it.
import { readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { errnoCode } from '../fs/errno.js';

export interface InstalledBinary {
  name: string;
  written: boolean; // false: an identical copy was already there
}

/** Regular files of the container's bin dir (links followed), by name. */
export function binaryNames(sourceDir: string): string[] {
  return readdirSync(sourceDir).filter((name) => statSync(path.join(sourceDir, name)).isFile());
}

/** Copies every binary atomically, mode kept; identical copies are left alone. */
export async function installBinaries(sourceDir: string, destDir: string): Promise<InstalledBinary[]> {
  const installed: InstalledBinary[] = [];
  for (const name of binaryNames(sourceDir)) {
    const source = path.join(sourceDir, name);
    const data = readFileSync(source);
    const dest = path.join(destDir, name);
    let same = false;
    try {
      same = readFileSync(dest).equals(data);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    if (!same) await writeFileAtomic(dest, data, { mode: statSync(source).mode & 0o7777 });
    installed.push({ name, written: !same });
  }
  return installed;
}

export function removeBinaries(destDir: string, names: readonly string[]): string[] {
  const removed: string[] = [];
  for (const name of names) {
    try {
      unlinkSync(path.join(destDir, name));
      removed.push(name);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }
  return removed;
}
