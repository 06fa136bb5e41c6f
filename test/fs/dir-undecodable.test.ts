// Dir.hasUndecodable: entries whose names are not UTF-8 reach JavaScript as U+FFFD and cannot be
// opened by that name; the directory is listed as bytes to find them, once per event-loop turn.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { tempDir } from '../helpers/tmp.js';

const raw = (dir: string, prefix: string) => Buffer.concat([Buffer.from(`${dir}/${prefix}`), Buffer.from([0xff]), Buffer.from('.conflist')]);
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('Dir.hasUndecodable', () => {
  it('finds an entry named by invalid UTF-8 under its decoded name, and nothing else', () => {
    const disk = tempDir();
    writeFileSync(raw(disk, '05-'), '{}');
    writeFileSync(path.join(disk, '10-\uFFFD.conflist'), '{}'); // U+FFFD itself, valid UTF-8: opened by name
    const dir = Dir.open(disk);
    try {
      expect(dir.list().sort()).toEqual(['05-\uFFFD.conflist', '10-\uFFFD.conflist']);
      expect(dir.hasUndecodable('05-\uFFFD.conflist')).toBe(true);
      expect(dir.hasUndecodable('10-\uFFFD.conflist')).toBe(false);
      expect(dir.hasUndecodable('06-\uFFFD.conflist')).toBe(false);
      expect(dir.hasUndecodable('05-x.conflist')).toBe(false);
    } finally {
      dir.close();
    }
  });

  it('lists once per turn and directory, whatever Dir asks: an entry made later is seen the next turn', async () => {
    const disk = tempDir();
    for (let i = 0; i < 3000; i++) writeFileSync(raw(disk, `${String(i).padStart(5, '0')}-`), '{}');
    await nextTurn();
    for (let i = 0; i < 3000; i++) {
      // A Dir per pass, as passes that finish at once each open net.d again.
      const dir = Dir.open(disk);
      try {
        expect(dir.hasUndecodable(`${String(i).padStart(5, '0')}-\uFFFD.conflist`)).toBe(true);
      } finally {
        dir.close();
      }
    }
    // The listing is this turn's: an entry made now is not in it (a listing per call would see it),
    // and the next turn lists again.
    writeFileSync(raw(disk, 'new-'), '{}');
    const dir = Dir.open(disk);
    try {
      expect(dir.hasUndecodable('new-\uFFFD.conflist')).toBe(false); // this turn's listing predates it
      await nextTurn();
      expect(dir.hasUndecodable('new-\uFFFD.conflist')).toBe(true);
    } finally {
      dir.close();
    }
  });
});
