// The addon's SHA-256 (native/digest.cc, Node's own OpenSSL) against node:crypto, and the random ids
// built from getrandom(2).
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentHash, sha256 } from '../../src/fs/content-hash.js';
import { randomUuid } from '../../src/random-uuid.js';
import { addon } from '../../src/native/addon.js';

describe('sha256', () => {
  it('equals node:crypto for any bytes and any string', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.string({ unit: 'binary' }), (bytes, text) => {
        const buffer = Buffer.from(bytes);
        expect(sha256(buffer)).toBe(createHash('sha256').update(buffer).digest('hex'));
        expect(sha256(text)).toBe(createHash('sha256').update(text).digest('hex'));
      }),
      { numRuns: 500 },
    );
    expect(contentHash(Buffer.from('x'))).toBe(createHash('sha256').update('x').digest('hex').slice(0, 12));
  });

  it('refuses anything but a Buffer or a string', () => {
    expect(() => addon.sha256(42 as unknown as string)).toThrow(TypeError);
  });
});

describe('random ids', () => {
  it('are version-4 UUIDs, all different', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => randomUuid()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('getrandom gives the bytes asked for, and refuses silly sizes', () => {
    expect(addon.getrandom(0).length).toBe(0);
    expect(addon.getrandom(256).length).toBe(256);
    expect(() => addon.getrandom(257)).toThrow(RangeError);
    expect(() => addon.getrandom(-1)).toThrow(RangeError);
  });
});
