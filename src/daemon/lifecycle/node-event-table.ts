// Which Event on the Node a reason not to be ready is (docs/design.md, Kubernetes): a table keyed by
// the condition or the config's status, never by the text /readyz prints. Pure.
//
// Each Event has a key that stays the same while the cause does (the condition, or the config and its
// status): repeats of it count up one Event's series instead of making new Events. Its note is stable
// too: nothing that changes between repeats (a fight's next retry time) goes into it.
import type { NodeEventReason } from '../../kube/node-events.js';
import type { ConditionKey, ConfigStatus, NotReady } from '../shared/readiness.js';
import { FIGHT_CAUSE } from '../keepers/fight-detector.js';

export interface NodeEventOf {
  reason: NodeEventReason;
  type: 'Normal' | 'Warning';
  /** What makes two occurrences the same Event. */
  key: string;
  note: string;
}

/** Conditions by their kind (`target-dir:<dir>` is one kind); undefined: no Event. */
const CONDITIONS: Record<string, NodeEventReason | undefined> = {
  // Starting and stopping go without saying; standing by is a hand-over, not a failure.
  lifecycle: undefined,
  standby: undefined,
  'net-dir': 'Unchained',
  owner: 'Unchained',
  scan: 'Unchained',
  kubeconfig: 'Unchained',
  'target-dir': 'Unchained',
  binaries: 'BinaryMissing',
  'plugin-binary': 'BinaryMissing',
};

/** Config statuses; undefined: no Event (the fine ones never reach here). */
const STATUSES: Record<ConfigStatus, NodeEventReason | undefined> = {
  chained: undefined,
  'out-of-scope': undefined,
  delegating: undefined,
  'not-loaded': undefined,
  backoff: 'Fight',
  'no-binary': 'BinaryMissing',
  invalid: 'Unchained',
  dangling: 'Unchained',
  loop: 'Unchained',
  'not-regular': 'Unchained',
  unmanaged: 'Unchained',
  'too-large': 'Unchained',
  conflict: 'Unchained',
  error: 'Unchained',
};

const conditionKind = (key: ConditionKey) => (key.startsWith('target-dir:') ? 'target-dir' : key);

/**
 * The Event for one reason not to be ready, or undefined. In owned mode a config that cannot be kept
 * (an error) leaves the runtime loading an older copy: StaleOwnedCopy.
 */
export function nodeEventOf(entry: NotReady, mode: 'in-place' | 'owned'): NodeEventOf | undefined {
  if (entry.kind === 'condition') {
    const reason = CONDITIONS[conditionKind(entry.key)];
    return reason === undefined ? undefined : { reason, type: 'Warning', key: `condition:${entry.key}`, note: entry.reason };
  }
  let reason = STATUSES[entry.status];
  if (reason === undefined) return undefined;
  if (mode === 'owned' && entry.status === 'error') reason = 'StaleOwnedCopy';
  // A fight's detail carries its next retry time: the note says the cause instead.
  const detail = entry.status === 'backoff' ? FIGHT_CAUSE : entry.detail;
  return { reason, type: 'Warning', key: `config:${entry.name}:${entry.status}`, note: `${entry.name}: ${entry.status}${detail === undefined ? '' : ` (${detail})`}` };
}
