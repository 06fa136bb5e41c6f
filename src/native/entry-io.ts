// The addon's entry I/O (native/entry_io.h): a config read in one call, and replacements landed in
// batches on libuv's pool.
import { addon, type NativeAddon } from './addon.js';

export { READ_KIND, READ_SLOTS } from './addon.js';
export type EntryIo = Pick<NativeAddon, 'readEntryAt' | 'replaceEntriesAt' | 'replaceEntriesAtNow'>;
export const entryIo: EntryIo = addon;
