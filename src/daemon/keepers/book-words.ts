// What each keeper's book (config-book.ts) says in its log lines and on /readyz: the in-place keeper
// speaks of the configs it patches, owned mode of its one copy.
import { FIGHT_CAUSE } from './fight-detector.js';

/** What the book says in logs and on /readyz: each keeper words its own file. */
export interface BookWords {
  /** The warning logged once per change of a config's problem. */
  problem: string;
  /** The warning logged once per fight. */
  fightStarted: string;
  /** What the other writer does, on /readyz during a backoff ("patch reverted"). */
  reverted: string;
  /** What we did, on /readyz while a fight's write settles ("patch written"). */
  written: string;
  /** The error logged when a pass throws. */
  failed: string;
  /** The info line that sums up a burst of patches landed (one line, not one per file). */
  chainedBurst: string;
}

export const IN_PLACE_WORDS: BookWords = {
  problem: 'config left unchanged',
  fightStarted: `another writer reverts the plugin within milliseconds of every write (${FIGHT_CAUSE}); backing off`,
  reverted: 'patch reverted',
  written: 'patch written',
  failed: 'patching config failed',
  chainedBurst: 'chained plugin into configs',
};

export const OWNED_WORDS: BookWords = {
  problem: 'owned config not in place',
  fightStarted: `the owned config is removed, renamed or reverted within milliseconds of every write (${FIGHT_CAUSE}); backing off`,
  reverted: 'removed, renamed or reverted',
  written: 'written',
  failed: 'writing the owned config failed',
  chainedBurst: 'owned config written',
};
