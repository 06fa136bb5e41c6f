import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { fsyncDir } from '../../src/fs/dir-sync.js';
import { tempDir } from '../helpers/tmp.js';

describe('fsyncDir', () => {
  it('shares one queued fsync between callers that arrive while one is running', async () => {
    const disk = tempDir();
    writeFileSync(path.join(disk, 'a'), '');
    const dir = Dir.open(disk);
    const first = fsyncDir(dir);
    const second = fsyncDir(dir);
    const third = fsyncDir(dir);
    expect(second).toBe(third); // both wait for the fsync that starts after the running one
    expect(second).not.toBe(first);
    await Promise.all([first, second, third]);
    // Idle again: a new call starts its own fsync at once.
    const fourth = fsyncDir(dir);
    expect(fourth).not.toBe(second);
    await fourth;
    dir.close();
  });

  it('rejects for a closed directory fd, and recovers', async () => {
    const disk = tempDir();
    const closed = Dir.open(disk);
    closed.close();
    await expect(fsyncDir(closed)).rejects.toMatchObject({ code: 'EBADF' });
    const dir = Dir.open(disk);
    await expect(fsyncDir(dir)).resolves.toBeUndefined();
    dir.close();
  });
});
