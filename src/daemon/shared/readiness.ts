// Ready means: the watches are live, the first scan is done, and every current config is chained.
// When not ready, the reasons say which file and why (the /readyz body, and one log line per change).

export type ConfigStatus =
  | 'chained'
  | 'out-of-scope' // CNI_PATCH_SCOPE=primary and not the file the runtime loads
  | 'invalid'
  | 'dangling'
  | 'loop'
  | 'not-regular'
  | 'backoff'
  | 'unmanaged' // the runtime may load it (libcni: .conf, .conflist, .json), but CNI_CONF_SUFFIXES leaves it out
  | 'too-large' // over MAX_CONFIG_BYTES: never read whole, never patched
  | 'conflict' // X.conf and X.conflist both present: the upgrade would overwrite the conflist
  | 'no-binary' // the plugin's binary is not on the host as installed: chaining would fail every pod
  | 'delegating' // a meta-plugin (Multus) config: never chained itself, its delegate is
  | 'not-loaded' // a single-plugin config whose name the runtime never loads (`X.CONF`): left as it is
  | 'error';

/** The statuses a keeper reports as a problem with a detail (never the fine ones it sets by itself). */
export type ProblemStatus = Exclude<ConfigStatus, 'chained' | 'out-of-scope' | 'delegating' | 'unmanaged'>;

const FINE: ReadonlySet<ConfigStatus> = new Set(['chained', 'out-of-scope', 'delegating', 'not-loaded']);

/**
 * A node-wide condition that keeps the agent unready while it fails, set by the one controller that
 * owns it (docs/design.md, Readiness):
 *   lifecycle      the daemon: starting (until its first passes are done), or stopping
 *   net-dir        the net.d watch: the directory is missing or cannot be watched
 *   standby        the ownership role: another instance owns the node (an upgrade's overlap)
 *   owner          the ownership role: the owner file cannot be written
 *   scan           the node scan: net.d cannot be listed
 *   kubeconfig     the installed: the kubeconfig cannot be written
 *   binaries       the installed: the plugin binaries cannot be installed
 *   plugin-binary  the installed: the plugin's binary on the host is not the one installed
 *   target-dir:D   the symlink-target watches: directory D cannot be watched
 */
export type ConditionKey = 'lifecycle' | 'net-dir' | 'standby' | 'owner' | 'scan' | 'kubeconfig' | 'binaries' | 'plugin-binary' | `target-dir:${string}`;

/** One condition's handle, held by the controller that owns it. */
export class Condition {
  /**
   * The reason this condition fails, as its owner last set it: kept here, so that the owner asks its
   * own handle (to log a change once) and readiness stays output, never read back to decide.
   */
  private current: string | undefined;

  constructor(
    private readonly readiness: Readiness,
    readonly key: ConditionKey,
  ) {}

  /** Fails the condition with `reason`, or clears it (undefined). */
  set(reason: string | undefined): void {
    this.current = reason;
    this.readiness.block(this.key, reason);
  }

  clear(): void {
    this.set(undefined);
  }

  get failing(): boolean {
    return this.current !== undefined;
  }

  get reason(): string | undefined {
    return this.current;
  }
}

/** One reason not to be ready, typed: what the /readyz text says, and what the Node's Events are chosen from. */
export type NotReady = { kind: 'condition'; key: ConditionKey; reason: string } | { kind: 'config'; name: string; status: ConfigStatus; detail: string | undefined };

export interface ReadinessReport {
  ready: boolean;
  /** Each reason as /readyz prints it (control characters are escaped by the health server). */
  reasons: string[];
  /** The same reasons, typed, in the same order. */
  entries: NotReady[];
}

export class Readiness {
  private readonly configs = new Map<string, { status: ConfigStatus; detail?: string }>();
  private readonly blockers = new Map<string, string>();
  // Kept up to date on every change, so that `ready` costs nothing after each of a storm's passes.
  private notFine = 0;

  set(name: string, status: ConfigStatus, detail?: string): void {
    // Updated in place: every pass of a storm sets its config's status once.
    const entry = this.configs.get(name);
    if (entry === undefined) {
      this.configs.set(name, { status, detail });
    } else {
      if (!FINE.has(entry.status)) this.notFine--;
      entry.status = status;
      entry.detail = detail;
    }
    if (!FINE.has(status)) this.notFine++;
  }

  delete(name: string): void {
    const old = this.configs.get(name);
    if (old === undefined) return;
    this.configs.delete(name);
    if (!FINE.has(old.status)) this.notFine--;
  }

  get ready(): boolean {
    return this.blockers.size === 0 && this.notFine === 0;
  }

  statusOf(name: string): ConfigStatus | undefined {
    return this.configs.get(name)?.status;
  }

  /** The handle of one node-wide condition, for the controller that owns it. */
  condition(key: ConditionKey): Condition {
    return new Condition(this, key);
  }

  /** A node-wide reason not to be ready (starting, net dir missing, superseded); undefined clears it. */
  block(key: ConditionKey, reason: string | undefined): void {
    if (reason === undefined) this.blockers.delete(key);
    else this.blockers.set(key, reason);
  }


  report(): ReadinessReport {
    const entries: NotReady[] = [...this.blockers].map(([key, reason]) => ({ kind: 'condition', key: key as ConditionKey, reason }));
    for (const [name, { status, detail }] of [...this.configs].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!FINE.has(status)) entries.push({ kind: 'config', name, status, detail });
    }
    const reasons = entries.map((e) => (e.kind === 'condition' ? e.reason : `${e.name}: ${e.status}${e.detail === undefined ? '' : ` (${e.detail})`}`));
    return { ready: entries.length === 0, reasons, entries };
  }
}
