// Content hashes: the full sha256 that recognises our own writes, and the 12-hex-digit prefix that
// temp names carry (cni/names.ts).
import { createHash } from 'node:crypto';

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The 12-hex-digit content hash that temp names carry. */
export function contentHash(data: Buffer): string {
  return contentHashOfDigest(sha256(data));
}

/** contentHash of data whose sha256 is known already. */
export function contentHashOfDigest(sha256Hex: string): string {
  return sha256Hex.slice(0, 12);
}
