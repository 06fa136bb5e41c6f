// What each keeper's book (config-book.ts) says in its log lines and on /readyz: the in-place keeper
// speaks of the configs it patches, owned mode of its one copy.
import type { BookWords } from './config-book.js';
import { FIGHT_CAUSE } from './fight-detector.js';

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
