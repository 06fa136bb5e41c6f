// Waiting on a condition with a deadline. The deadline only bounds a failing test; passing tests
// return as soon as the condition holds, so no test depends on how fast the machine is. Deadlines are
// on the monotonic clock: this VM's wall clock is stepped, and a step forward ended waits early.
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Collects values pushed by a callback, and lets a test wait until one matches. */
export class Inbox<T> {
  readonly items: T[] = [];
  private waiters: Array<() => void> = [];

  push = (...values: T[]): void => {
    this.items.push(...values);
    for (const wake of this.waiters.splice(0)) wake();
  };

  async until(match: (item: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.items.find(match);
      if (found !== undefined) return found;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
