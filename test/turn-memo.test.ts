// TurnMemo: a value per key, worked out once per event-loop turn, again after forget().
import { describe, expect, it } from 'vitest';
import { TurnMemo } from '../src/turn-memo.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('TurnMemo', () => {
  it('works a key out once per turn (undefined included), per key, and again after forget or in the next turn', async () => {
    const memo = new TurnMemo<string, number | undefined>();
    let calls = 0;
    const work = (value: number | undefined) => () => {
      calls++;
      return value;
    };
    expect(memo.get('a', work(1))).toBe(1);
    expect(memo.get('a', work(2))).toBe(1);
    expect(memo.get('b', work(undefined))).toBe(undefined);
    expect(memo.get('b', work(3))).toBe(undefined);
    expect(calls).toBe(2);
    memo.forget('a');
    expect(memo.get('a', work(4))).toBe(4);
    expect(calls).toBe(3);
    await nextTurn();
    expect(memo.get('a', work(5))).toBe(5);
    expect(memo.get('b', work(6))).toBe(6);
    expect(calls).toBe(5);
    memo.forget('a');
    memo.forget('b');
    expect(memo.get('a', work(7))).toBe(7); // emptied by forget: still cleared at the turn's end
    await nextTurn();
    expect(memo.get('a', work(8))).toBe(8);
  });
});
