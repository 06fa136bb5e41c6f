// Where owned mode's copy sits in the runtime's load order (docs/design.md, "Owned mode"): the
// runtime loads the first libcni name, so the copy must sort before the primary and before every
// other config that is not a meta-plugin's, and a meta-plugin config between the copy and the
// primary would be bypassed by it. Pure: configs in, the verdict out (test/daemon/owned-placement.test.ts).
import { compareNames } from '../../cni/names.js';

export interface OwnedPlacement<C> {
  /** The first config (not a meta-plugin's) that sorts before the copy: the runtime would load it instead. */
  shadowedBy: C | undefined;
  /** Meta-plugin configs the runtime loads before the copy: their delegates are kept in place. */
  metasBefore: C[];
  /** A meta-plugin config that sorts after the copy but before the primary: the copy would bypass it. */
  bypasses: C | undefined;
}

/** `configs`: net.d's configs in load order, our copies left out; `isMeta`: a meta-plugin's config. */
export function placeOwnedCopy<C extends { name: string }>(configs: readonly C[], isMeta: (config: C) => boolean, primary: string, ownedName: string): OwnedPlacement<C> {
  const beforeCopy = (c: C) => compareNames(c.name, ownedName) < 0;
  return {
    shadowedBy: configs.find((c) => !isMeta(c) && beforeCopy(c)),
    metasBefore: configs.filter((c) => isMeta(c) && beforeCopy(c)),
    bypasses: configs.find((c) => isMeta(c) && compareNames(c.name, ownedName) > 0 && compareNames(c.name, primary) < 0),
  };
}
