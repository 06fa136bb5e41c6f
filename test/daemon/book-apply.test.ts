// ConfigBook.apply, the one place a pass's outcome is recorded (config-book.ts): driven alone, with
// outcomes as a pass returns them, a real Readiness and Metrics, and a logger whose lines the test reads.
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IN_PLACE_WORDS } from '../../src/daemon/keepers/book-words.js';
import { ConfigBook } from '../../src/daemon/keepers/config-book.js';
import { AGAIN, CHAINED, GONE, STALE_WRITE, problem, written, type PassOutcome } from '../../src/daemon/keepers/pass-outcome.js';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { Readiness } from '../../src/daemon/shared/readiness.js';

const NAME = '10-calico.conflist';
const FILE = `/host/etc/cni/net.d/${NAME}`;

function book() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const readiness = new Readiness();
  const metrics = new Metrics('test', 'native');
  const triggered: string[] = [];
  const clock = { now: 0 };
  const b = new ConfigBook({ readiness, log, metrics, now: () => clock.now }, IN_PLACE_WORDS, { trigger: (name) => triggered.push(name) });
  const said = (msg: string) => lines.filter((l) => l.msg === msg);
  const status = () => readiness.report().entries.find((e) => e.kind === 'config' && e.name === NAME);
  return { b, lines, readiness, metrics, triggered, clock, said, status };
}

const landed = (digest?: string): PassOutcome => ({ kind: 'written', fileKey: FILE, landed: { name: NAME, digest, since: process.hrtime.bigint(), target: undefined, spare: false } });

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('ConfigBook.apply: each outcome, what it records, says and counts', () => {
  it('chained: the config is ready, nothing said or counted', () => {
    const t = book();
    t.b.apply(NAME, CHAINED);
    expect(t.readiness.report()).toMatchObject({ ready: true, entries: [] });
    expect(t.b.names()).toEqual([NAME]);
    expect(t.lines).toEqual([]);
  });

  it('written by this pass: recorded (its digest tells our own event), counted, one debug line, one info line per burst', () => {
    const t = book();
    t.b.apply(NAME, landed('d1'));
    t.b.apply('20-other.conflist', { kind: 'written', fileKey: '/host/etc/cni/net.d/20-other.conflist', landed: { name: '20-other.conflist', digest: undefined, since: process.hrtime.bigint(), target: undefined, spare: true } });
    expect(t.b.wroteBefore(FILE)).toBe(true);
    expect(t.b.holdsOurWrite(t.b.file(FILE), 'd1')).toBe(true);
    expect(t.metrics.patches.value).toBe(2);
    expect(t.metrics.patchLatency.count).toBe(2);
    expect(t.said('chained plugin into config')).toHaveLength(2);
    expect(t.said('chained plugin into configs')).toHaveLength(0); // the burst is still open
    vi.advanceTimersByTime(100);
    expect(t.said('chained plugin into configs')).toMatchObject([{ count: 2, files: [NAME, '20-other.conflist'] }]);
    expect(t.readiness.report().ready).toBe(true);
  });

  it('written earlier (its own event): no record, count or line of a write', () => {
    const t = book();
    t.b.apply(NAME, written(FILE));
    expect(t.b.wroteBefore(FILE)).toBe(false);
    expect(t.metrics.patches.value).toBe(0);
    expect(t.lines).toEqual([]);
    expect(t.readiness.report().ready).toBe(true);
  });

  it('a problem whose write landed all the same (a shadowed owned copy): recorded and counted, the problem stays and is said once', () => {
    const t = book();
    const shadowed: PassOutcome = { kind: 'problem', status: 'error', detail: '00-a.conflist sorts before the copy', landed: { name: NAME, digest: 'd2', since: undefined, target: undefined, spare: false } };
    t.b.apply(NAME, shadowed);
    t.b.apply(NAME, problem('error', '00-a.conflist sorts before the copy'));
    expect(t.b.holdsOurWrite(t.b.file(NAME), 'd2')).toBe(true);
    expect(t.metrics.patches.value).toBe(1);
    expect(t.metrics.patchLatency.count).toBe(0); // no event time to measure from
    expect(t.status()).toMatchObject({ status: 'error', detail: '00-a.conflist sorts before the copy' });
    expect(t.said(IN_PLACE_WORDS.problem)).toHaveLength(1);
  });

  it('the burst line is written at stop, not lost', () => {
    const t = book();
    t.b.apply(NAME, landed());
    t.b.stop();
    expect(t.said('chained plugin into configs')).toMatchObject([{ count: 1 }]);
  });

  it('backoff that starts a fight: one warning and the fight counted; each backoff counted and retried', () => {
    const t = book();
    t.b.apply(NAME, { kind: 'backoff', detail: 'patch reverted; next try in 1000 ms', retryMs: 1_000, fightStartedMs: 1_000 });
    t.b.apply(NAME, { kind: 'backoff', detail: 'patch reverted; next try in 2000 ms', retryMs: 2_000, fightStartedMs: 0 });
    expect(t.said(IN_PLACE_WORDS.fightStarted)).toMatchObject([{ file: NAME, backoffMs: 1_000 }]);
    expect(t.metrics.fights.value).toBe(1);
    expect(t.metrics.backoffs.value).toBe(2);
    expect(t.status()).toMatchObject({ status: 'backoff', detail: 'patch reverted; next try in 2000 ms' });
    vi.advanceTimersByTime(1_999);
    expect(t.triggered).toEqual([]); // the second backoff replaced the first's timer
    vi.advanceTimersByTime(1);
    expect(t.triggered).toEqual([NAME]);
  });

  it('problem: on /readyz, logged once per change of status or detail; invalid content counted as it is logged', () => {
    const t = book();
    t.b.apply(NAME, problem('invalid', 'unexpected end [sha256 aaa]'));
    t.b.apply(NAME, problem('invalid', 'unexpected end [sha256 aaa]'));
    t.b.apply(NAME, problem('invalid', 'unexpected end [sha256 bbb]'));
    t.b.apply(NAME, problem('error', 'a config of the chained plugin alone is no network', 100));
    expect(t.said(IN_PLACE_WORDS.problem).map((l) => l.status)).toEqual(['invalid', 'invalid', 'error']);
    expect(t.metrics.parseErrors.value).toBe(2);
    expect(t.status()).toMatchObject({ status: 'error' });
    vi.advanceTimersByTime(100);
    expect(t.triggered).toEqual([NAME]);
  });

  it('gone: its status goes; a removal the pass made is said once, with why', () => {
    const t = book();
    t.b.apply(NAME, problem('error', 'x'));
    t.b.apply(NAME, GONE);
    expect(t.readiness.report().ready).toBe(true);
    expect(t.b.names()).toEqual([]);
    t.b.apply(NAME, problem('error', 'x'));
    t.b.apply(NAME, { kind: 'gone', rescan: false, removed: { file: NAME, why: 'removed it: because' } });
    expect(t.said('removed it: because')).toMatchObject([{ file: NAME }]);
    expect(t.b.names()).toEqual([]);
  });

  it('again: another pass at once; a stale write (a newer one given back) is counted', () => {
    const t = book();
    t.b.apply(NAME, AGAIN);
    t.b.apply(NAME, STALE_WRITE);
    expect(t.triggered).toEqual([NAME, NAME]);
    expect(t.metrics.staleWrites.value).toBe(1);
    expect(t.b.names()).toEqual([]); // no status for a name that never had one
  });
});
