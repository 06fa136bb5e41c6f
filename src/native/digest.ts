// Bytes from the addon: SHA-256 by the OpenSSL Node links (native/digest.h), and getrandom(2).
import { addon, type NativeAddon } from './addon.js';

export type Digest = Pick<NativeAddon, 'sha256' | 'getrandom'>;
export const digest: Digest = addon;
