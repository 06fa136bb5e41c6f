// Gives the memory a burst of work freed back (docs/performance.md, The targets as restated): V8's
// heap once the burst is over (fullGc, below), and glibc's arenas to the kernel. glibc keeps
// freed malloc memory in its arenas, and raises its own thresholds after large frees (mallopt(3),
// dynamic adjustment), so a storm's buffers would stay resident, and count in the pod's working set,
// until the next one reuses them. Once at start and once after each burst of passes, when the node
// has been quiet for a moment (250 ms), the agent asks for it back (native/malloc_trim.h). Quiet first: trimming
// in the middle of a storm would hand back pages the next file needs at once.
import { createRequire } from 'node:module';
import { mallocTrim } from '../../native/memory.js';

const require = createRequire(import.meta.url);

/** Passes that make a burst worth a trim: a few configs changing is no burst. */
const BURST_PASSES = 64;
/** How long without a pass before the burst counts as over: a storm's passes come microseconds apart. */
const QUIET_MS = 250;

export class MemoryReturn {
  private passesSinceTrim = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastPassAt = 0;

  constructor(
    private readonly trim: () => boolean = mallocTrim,
    /** A full collection of V8's heap (after a burst only: at start it touches more than it frees). */
    private readonly collect: () => void = fullGc,
  ) {}

  /** Start is done: its transient allocations (the bundle's source read, the first scan) go back. */
  afterStart(): void {
    this.passesSinceTrim = 0;
    this.trim();
  }

  /** One pass ended. (Called for every pass: one increment, and a timer once per burst.) */
  passDone(): void {
    this.passesSinceTrim++;
    this.lastPassAt = Date.now();
    if (this.passesSinceTrim < BURST_PASSES || this.timer !== undefined) return;
    this.arm(QUIET_MS);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const quietFor = Date.now() - this.lastPassAt;
      // Still busy: look again once it could have been quiet long enough.
      if (quietFor < QUIET_MS) return this.arm(QUIET_MS - quietFor);
      this.passesSinceTrim = 0;
      this.collect();
      this.trim();
    }, ms);
    this.timer.unref();
  }
}

// V8 keeps the heap a storm grew (a larger young generation, old-space pages of promoted passes)
// until its memory reducer notices the process is idle, ~10 s later (measured: RssAnon 25.7 MiB for
// 10 s after three storms, then 15.7). One full collection when the burst is over frees it at once
// (19.3 MiB), for a few milliseconds of one thread. Node has no API for it but `gc`, which exists
// only in a context made after --expose-gc is set: made once, at the first burst (node:vm).
let gcFunction: (() => void) | undefined;
function fullGc(): void {
  if (gcFunction === undefined) {
    const { setFlagsFromString } = require('node:v8') as typeof import('node:v8');
    setFlagsFromString('--expose-gc');
    gcFunction = (require('node:vm') as typeof import('node:vm')).runInNewContext('gc') as () => void;
  }
  gcFunction();
}
