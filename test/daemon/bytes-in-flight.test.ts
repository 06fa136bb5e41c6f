import { describe, expect, it } from 'vitest';
import { BytesInFlight } from '../../src/daemon/bytes-in-flight.js';

describe('BytesInFlight', () => {
  it('has room until the held bytes reach the budget, and gives them back when the work ends, even by throwing', async () => {
    const inFlight = new BytesInFlight(100);
    let release!: () => void;
    const first = inFlight.during(60, () => new Promise<void>((resolve) => (release = resolve)));
    expect(inFlight.hasRoom).toBe(true);
    const second = inFlight.during(40, () => Promise.reject(new Error('write failed')));
    expect(inFlight.hasRoom).toBe(false); // 60 + 40 held
    await expect(second).rejects.toThrow('write failed');
    expect(inFlight.hasRoom).toBe(true); // the failed one gave its 40 back
    release();
    await first;
    const third = inFlight.during(150, async () => inFlight.hasRoom);
    expect(await third).toBe(false); // one pass over the budget alone is held, and counted
    expect(inFlight.hasRoom).toBe(true);
  });
});
