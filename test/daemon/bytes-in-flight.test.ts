import { describe, expect, it } from 'vitest';
import { BytesInFlight } from '../../src/daemon/keepers/bytes-in-flight.js';

describe('BytesInFlight', () => {
  it('has room until the held bytes reach the budget, and again once they are released', () => {
    const inFlight = new BytesInFlight(100);
    inFlight.hold(60);
    expect(inFlight.hasRoom).toBe(true);
    inFlight.hold(40);
    expect(inFlight.hasRoom).toBe(false); // 60 + 40 held
    inFlight.release(40);
    expect(inFlight.hasRoom).toBe(true);
    inFlight.release(60);
    inFlight.hold(150);
    expect(inFlight.hasRoom).toBe(false); // one pass over the budget alone is held, and counted
    inFlight.release(150);
    expect(inFlight.hasRoom).toBe(true);
  });

  it('holds a pending outcome until it settles, either way, and nothing for one already there', async () => {
    const inFlight = new BytesInFlight(100);
    expect(inFlight.holdUntil(500, 'chained')).toBe('chained');
    expect(inFlight.hasRoom).toBe(true);

    let finish!: (value: string) => void;
    const written = inFlight.holdUntil(500, new Promise<string>((resolve) => (finish = resolve)));
    expect(inFlight.hasRoom).toBe(false);
    finish('written');
    await expect(written).resolves.toBe('written');
    expect(inFlight.hasRoom).toBe(true);

    const failed = inFlight.holdUntil(500, Promise.reject(new Error('EIO')));
    expect(inFlight.hasRoom).toBe(false);
    await expect(failed).rejects.toThrow('EIO');
    expect(inFlight.hasRoom).toBe(true);
  });
});
