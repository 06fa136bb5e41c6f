// Gives the memory a burst of work freed back (docs/performance.md, The targets as restated): V8's
// heap once start or a burst is over (collect, below), and glibc's arenas to the kernel. glibc keeps
// freed malloc memory in its arenas, and raises its own thresholds after large frees (mallopt(3),
// dynamic adjustment), so a storm's buffers would stay resident, and count in the pod's working set,
// until the next one reuses them. Once at start and once after each burst of passes, when the node
// has been quiet for a moment (250 ms), the agent asks for it back (native/malloc_trim.h). Quiet first: trimming
// in the middle of a storm would hand back pages the next file needs at once.
import { collectGarbageForMemory, mallocTrim } from '../../native/memory.js';

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
    /**
     * A collection of V8's heap that reduces memory, once start is done and after each burst. V8
     * keeps the heap a storm grew (a larger young generation, old-space pages of promoted passes)
     * until its memory reducer notices the process is idle, ~10 s later (measured: RssAnon 25.7 MiB
     * for 10 s after three storms, then 15.7). One collection that reduces memory frees it at once,
     * for a few milliseconds of one thread. `gc()` could not: it leaves the young generation as large
     * as the storm made it (native/memory_pressure.h), and after start it touched more than it
     * freed (+0.45 MiB), where this one frees the young generation start grew (−0.95 MiB 1 s after
     * start, docs/performance.md).
     */
    private readonly collect: () => void = collectGarbageForMemory,
  ) {}

  /** Start is done: its transient allocations (the bundle's source read, the first scan) go back. */
  afterStart(): void {
    this.passesSinceTrim = 0;
    this.collect();
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
