import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CoalescingQueue, DEFAULT_PASS_CONCURRENCY, type PassEnded } from '../../src/daemon/shared/coalescing-queue.js';

/** A queue whose runner is these functions (the keepers implement PassRunner as methods). */
function queueOf(
  runPass: (key: string, ended: PassEnded<string>) => Promise<void> | void,
  passFailed: (key: string, error: unknown) => void,
  limit = DEFAULT_PASS_CONCURRENCY,
  hasRoom: () => boolean = () => true,
): CoalescingQueue {
  return new CoalescingQueue({ runPass, passFailed, hasRoom }, limit);
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('CoalescingQueue', () => {
  it('starts the first pass synchronously', () => {
    const started: string[] = [];
    const queue = queueOf(async (key) => void started.push(key), () => {});
    queue.trigger('a');
    expect(started).toEqual(['a']);
  });

  it('runs one pass per key at a time and turns any number of triggers meanwhile into one more pass', async () => {
    const g = gate();
    let running = 0;
    let maxRunning = 0;
    let passes = 0;
    const queue = queueOf(async () => {
      passes++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      if (passes === 1) await g.opened;
      running--;
    }, () => {});
    queue.trigger('a');
    for (let i = 0; i < 100; i++) queue.trigger('a');
    g.open();
    await queue.drain();
    expect(passes).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('runs different keys side by side', async () => {
    const g = gate();
    const started: string[] = [];
    const queue = queueOf(async (key) => {
      started.push(key);
      await g.opened;
    }, () => {});
    queue.trigger('a');
    queue.trigger('b');
    expect(started).toEqual(['a', 'b']);
    g.open();
    await queue.drain();
  });

  it('reports a failing pass and keeps working', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const queue = queueOf(async () => {
      calls++;
      if (calls === 1) throw new Error('EACCES');
    }, (_, err) => errors.push(err));
    queue.trigger('a');
    await queue.drain();
    queue.trigger('a');
    await queue.drain();
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it('a trigger from inside the pass causes exactly one more pass', async () => {
    let passes = 0;
    const queue: CoalescingQueue = queueOf(async (key) => {
      passes++;
      if (passes === 1) {
        queue.trigger(key);
        queue.trigger(key);
      }
    }, () => {});
    queue.trigger('a');
    await queue.drain();
    expect(passes).toBe(2);
    expect(queue.size).toBe(0);
  });
});

describe('CoalescingQueue concurrency bound', () => {
  it('runs at most `limit` passes at once, and every key gets its pass', async () => {
    let running = 0;
    let peak = 0;
    const done: string[] = [];
    const queue = queueOf(
      async (key) => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 2));
        running--;
        done.push(key);
      },
      () => {},
      4,
    );
    for (let i = 0; i < 50; i++) queue.trigger(`k${i}`);
    expect(queue.size).toBe(50);
    await queue.drain();
    expect(peak).toBe(4);
    expect(done.sort()).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`).sort());
    expect(queue.size).toBe(0);
  });

  it('coalesces triggers of a waiting key into its one pass', async () => {
    const passes = new Map<string, number>();
    const queue = queueOf(
      async (key) => {
        passes.set(key, (passes.get(key) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 2));
      },
      () => {},
      1,
    );
    queue.trigger('a');
    for (let i = 0; i < 10; i++) queue.trigger('b'); // b waits for a's slot
    await queue.drain();
    expect(passes.get('a')).toBe(1);
    expect(passes.get('b')).toBe(1);
  });

  it('starts a pass only while hasRoom() allows it, and always when none runs', async () => {
    let room = false;
    const started: string[] = [];
    const release = new Map<string, () => void>();
    const queue = queueOf(
      (key) => {
        started.push(key);
        return new Promise<void>((resolve) => release.set(key, resolve));
      },
      () => {},
      8,
      () => room,
    );
    queue.trigger('a'); // alone: room is not asked
    queue.trigger('b');
    queue.trigger('c');
    expect(started).toEqual(['a']);
    room = true;
    release.get('a')!();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['a', 'b', 'c']); // room again once a finished
    release.get('b')!();
    release.get('c')!();
    await queue.drain();
    expect(queue.size).toBe(0);
  });
});

describe('CoalescingQueue against a model', () => {
  type Step = { op: 'trigger'; key: string } | { op: 'finish'; pick: number } | { op: 'room'; room: boolean };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('trigger' as const), key: fc.constantFrom('a', 'b', 'c', 'd') }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('finish' as const), pick: fc.nat(7) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('room' as const), room: fc.boolean() }) },
  );
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

  // Whatever the order of triggers, finishing passes and room: one pass per key at a time, never more
  // than the limit at once, never more passes than triggers, and after the last trigger of a key a
  // pass of it starts (no change goes unseen), until the queue is empty. A runner either returns a
  // promise or calls `ended` (the reconciler's), at once or later.
  async function holdsTheModel(limit: number, steps: Step[], ending: 'promise' | 'ended', atOnce: boolean[]): Promise<void> {
    let room = true;
    let clock = 0;
    let passCount = 0;
    const running: Array<{ key: string; finish: () => void }> = [];
    const lastTrigger = new Map<string, number>();
    const lastStart = new Map<string, number>();
    const triggers = new Map<string, number>();
    const passes = new Map<string, number>();
    const start = (key: string, finish: () => void) => {
      expect(running.some((r) => r.key === key)).toBe(false);
      lastStart.set(key, ++clock);
      passes.set(key, (passes.get(key) ?? 0) + 1);
      const entry = { key, finish: () => {} };
      entry.finish = () => {
        running.splice(running.indexOf(entry), 1);
        finish();
      };
      running.push(entry);
      expect(running.length).toBeLessThanOrEqual(limit);
      return entry;
    };
    const queue = queueOf(
      (key, ended) => {
        if (ending === 'promise') return new Promise<void>((resolve) => void start(key, resolve));
        const entry = start(key, () => ended(key));
        if (atOnce[passCount++ % atOnce.length] === true) entry.finish();
      },
      () => {},
      limit,
      () => room,
    );
    const finishOne = async (pick: number) => {
      running[pick % running.length]!.finish();
      await settle();
    };
    for (const s of steps) {
      if (s.op === 'trigger') {
        lastTrigger.set(s.key, ++clock);
        triggers.set(s.key, (triggers.get(s.key) ?? 0) + 1);
        queue.trigger(s.key);
      } else if (s.op === 'room') {
        room = s.room;
      } else if (running.length > 0) {
        await finishOne(s.pick);
      }
    }
    room = true;
    while (running.length > 0) await finishOne(0);
    await queue.drain();
    expect(queue.size).toBe(0);
    for (const [key, at] of lastTrigger) {
      expect(lastStart.get(key)!).toBeGreaterThan(at);
      expect(passes.get(key)!).toBeLessThanOrEqual(triggers.get(key)!);
    }
  }

  it('keeps its promises for any interleaving of triggers, finished passes and room', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(step, { maxLength: 40 }), (limit, steps) => holdsTheModel(limit, steps, 'promise', [false])),
      { numRuns: 300 },
    );
  });

  it('keeps them when passes end by calling ended, some of them before runPass returns', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(step, { maxLength: 40 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (limit, steps, atOnce) =>
        holdsTheModel(limit, steps, 'ended', atOnce),
      ),
      { numRuns: 300 },
    );
  });
});

describe('CoalescingQueue with passes that end at once', () => {
  // A start with many configs already chained: every pass ends inside runPass. Starting the next
  // waiting pass from there would nest a frame per pass and overflow the stack.
  it('runs 200,000 waiting passes that each end before runPass returns, in trigger order', async () => {
    const order: string[] = [];
    let blocker: PassEnded<string> | undefined;
    const queue = queueOf(
      (key, ended) => {
        order.push(key);
        if (key === 'first') blocker = ended; // holds the only slot until every other key waits
        else ended(key);
      },
      () => {},
      1,
    );
    queue.trigger('first');
    const keys = Array.from({ length: 200_000 }, (_, i) => `k${i}`);
    for (const key of keys) queue.trigger(key);
    expect(queue.size).toBe(200_001);
    blocker!('first');
    expect(queue.size).toBe(0);
    expect(order).toEqual(['first', ...keys]);
    await queue.drain();
  });

  it('reports a pass that throws and runs the next', () => {
    const errors: unknown[] = [];
    const ran: string[] = [];
    const queue = queueOf(
      (key, ended) => {
        ran.push(key);
        if (key === 'a') throw new Error('EACCES');
        ended(key);
      },
      (_, err) => errors.push(err),
    );
    queue.trigger('a');
    queue.trigger('b');
    expect(ran).toEqual(['a', 'b']);
    expect(errors).toHaveLength(1);
    expect(queue.size).toBe(0);
  });

  it('takes a second ended() of one pass for nothing: the bound still holds', () => {
    let running = 0;
    let peak = 0;
    const open: Array<() => void> = [];
    const queue = queueOf(
      (key, ended) => {
        running++;
        peak = Math.max(peak, running);
        open.push(() => {
          running--;
          ended(key);
          ended(key); // a defect: said twice
        });
      },
      () => {},
      2,
    );
    for (const key of ['a', 'b', 'c', 'd', 'e']) queue.trigger(key);
    expect(running).toBe(2);
    while (open.length > 0) open.shift()!();
    expect(peak).toBe(2);
    expect(queue.size).toBe(0);
  });
});
