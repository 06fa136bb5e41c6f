// Content hashes: the full sha256 that recognises our own writes, and the 12-hex-digit prefix that
// temp names carry (cni/names.ts).
import { createHash } from 'node:crypto';

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The 12-hex-digit content hash that temp names carry. */
export function contentHash(data: Buffer): string {
  return sha256(data).slice(0, 12);
}
