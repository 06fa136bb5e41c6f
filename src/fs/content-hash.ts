// Content hashes: the full sha256 that recognises our own writes, and the 12-hex-digit prefix that
// temp names carry (cni/names.ts).
// The digest is computed by the addon (native/digest.h): Node's crypto module would cost ~10 ms of
// start and ~3 MiB of RSS for this one function.
import { digest } from '../native/digest.js';

export function sha256(data: Buffer | string): string {
  return digest.sha256(data);
}

/** The 12-hex-digit content hash that temp names carry. */
export function contentHash(data: Buffer): string {
  return contentHashOfDigest(sha256(data));
}

/** contentHash of data whose sha256 is known already. */
export function contentHashOfDigest(sha256Hex: string): string {
  return sha256Hex.slice(0, 12);
}
