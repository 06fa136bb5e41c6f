// A random (version 4) UUID from getrandom(2) (RFC 9562 §5.4), without Node's crypto module (see
// fs/content-hash.ts for why).
import { digest } from './native/digest.js';

export function randomUuid(): string {
  const b = digest.getrandom(16);
  b[6] = (b[6]! & 0x0f) | 0x40; // version 4
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
