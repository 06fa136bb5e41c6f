// Tests that need something of the machine: user namespaces, chattr, mount, xattrs, setfattr, mknod.
// Where it is missing they skip, loudly, on a developer's machine; in CI (CI=true) they fail instead,
// so that a green CI run has run every one of them.
import { it, type TestContext } from 'vitest';

const inCi = process.env.CI === 'true';

/** `it`, or, where `available` is false, a skip (off CI) or a failure naming `what` (in CI). */
export function itWith(available: boolean, what: string): typeof it {
  if (available) return it;
  if (!inCi) return it.skip as typeof it;
  return ((name: string) => it(name, () => {
    throw new Error(`${what} is not available on this machine, and CI must run this test`);
  })) as unknown as typeof it;
}

/** Inside a test: skip it (off CI) or fail it (in CI), naming what the machine lacks. */
export function skipOrFail(ctx: TestContext, what: string): never {
  if (inCi) throw new Error(`${what} is not available on this machine, and CI must run this test`);
  ctx.skip();
  throw new Error('unreachable: ctx.skip() throws');
}
