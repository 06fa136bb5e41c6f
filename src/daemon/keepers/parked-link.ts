// A converted `.conf` symlink is parked under a hidden name (names.ts parkedLinkName), the durable mark
// of our conversion (conf-conversion.ts): whether it still stands is asked by every pass of the link,
// and by the start, which puts stale ones back (stop/parked-links.ts).
import { madeByConversion } from '../../cni/conflist.js';
import { conflistName } from '../../cni/names.js';
import { readEntry } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';

/**
 * What has taken the place of a parked link's conversion since it was made (a SIGKILL may leave the
 * link parked for long): the primary's new `X.conf`, or a conflist of that name that is not our
 * conversion (conflist.ts madeByConversion), its own. Either way the parked link is stale: put back,
 * its `.conf` would sort before the conflist and be loaded instead. Undefined: the conversion stands.
 */
export function parkedLinkSuperseded(dir: Dir, original: string, pluginType: string, maxBytes: number): 'conf' | 'conflist' | undefined {
  if (dir.lstat(original) !== undefined) return 'conf';
  const conflist = readEntry(dir, conflistName(original), maxBytes);
  if (conflist.kind === 'missing' || (conflist.kind === 'file' && madeByConversion(conflist.bytes, pluginType))) return undefined;
  return 'conflist';
}

