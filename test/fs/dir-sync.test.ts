import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fsyncDir } from '../../src/fs/dir-sync.js';
import { tempDir } from '../helpers/tmp.js';

describe('fsyncDir', () => {
  it('shares one queued fsync between callers that arrive while one is running', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'a'), '');
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
  });

  it('rejects for a directory that does not exist, and recovers', async () => {
    const dir = tempDir();
    await expect(fsyncDir(path.join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fsyncDir(dir)).resolves.toBeUndefined();
  });
});
