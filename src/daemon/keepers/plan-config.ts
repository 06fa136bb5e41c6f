// Step (3) of an in-place pass, decided: what a config's content asks for, from the content's patch
// plan (conflist.ts planPatch) and what the pass knows of the file. Pure: no I/O and no state; the
// pass (in-place-pass.ts) reads before it and acts after it, and the table is its unit test
// (test/daemon/plan-config.test.ts).
import { PLUGIN_ALONE, type PatchPlan } from '../../cni/conflist.js';
import { delegationProblem } from '../../cni/meta-plugin.js';
import { conflistName, parkedLinkOriginal } from '../../cni/names.js';
import { CHAINED, problem, quiet, type PassOutcome, type Removal } from './pass-outcome.js';

/** What the pass knows of the file besides its content. */
export interface ConfigFacts {
  /** The config's name in net.d. */
  name: string;
  /** The file sits in net.d under that name: no link leads to it. */
  plainInNetDir: boolean;
  /** A meta-plugin's delegate named by path (meta-plugin.ts): never converted, nor a meta itself. */
  metaDelegate: boolean;
  /** sha256 of the content (hex), named in an invalid config's problem. */
  digest: string;
  /** The meta-plugin config that reads this file by path, if any: asked only where a conversion is due. */
  readBy: () => string | undefined;
}

export type ConfigStep =
  /** Nothing to write: the outcome as it is. */
  | { kind: 'outcome'; outcome: PassOutcome }
  /** A meta-plugin config: its delegate's file is the one to patch. */
  | { kind: 'delegate'; delegation: Extract<PatchPlan, { action: 'delegates' }>['delegation'] }
  /** linkerd-cni's interface-mode leftover: removed, if it is still the content read. */
  | { kind: 'remove'; removed: Removal }
  /** The patched bytes are due under `destName`: the same name, or the `.conflist` a `.conf` becomes. */
  | { kind: 'patch'; bytes: Buffer; destName: string };

/** The file linkerd-cni's interface mode wrote, and its installer deletes at start. */
const INTERFACE_MODE_LEFTOVER = '01-linkerd-cni.conf';

export function planConfig(plan: PatchPlan, facts: ConfigFacts): ConfigStep {
  const { name } = facts;
  switch (plan.action) {
    // Half-written or broken: left as it is; the write that completes it brings another event.
    case 'invalid':
      return { kind: 'outcome', outcome: problem('invalid', `${plan.reason} [sha256 ${facts.digest.slice(0, 12)}]`) };
    case 'refuse':
      return { kind: 'outcome', outcome: problem('error', plan.reason) };
    case 'delegates':
      return facts.metaDelegate ? { kind: 'outcome', outcome: problem('error', delegationProblem.nested) } : { kind: 'delegate', delegation: plan.delegation };
    case 'none':
      return { kind: 'outcome', outcome: CHAINED };
    case 'plugin-alone':
      return pluginAlone(facts);
    case 'write':
      break;
  }
  // A single-plugin config becomes a conflist of the same stem; any other keeps its name.
  const destName = plan.upgraded ? conflistName(parkedLinkOriginal(name) ?? name) : name;
  if (plan.upgraded && destName === name) {
    // libcni matches `.conf` case-sensitively: the runtime never loads `X.CONF`, and a conversion
    // would turn it into the `.conflist` it loads first. Left as it is, and harmless as it is.
    return { kind: 'outcome', outcome: quiet('not-loaded', 'a single-plugin config the runtime does not load (libcni matches .conf, .conflist and .json case-sensitively): left as it is') };
  }
  if (destName !== name) {
    // Multus reads its delegate by path at every ADD: a converted .conf would be a missing file.
    const readBy = facts.metaDelegate ? name : facts.readBy();
    if (readBy !== undefined) {
      return { kind: 'outcome', outcome: problem('error', `${readBy} (a meta-plugin) reads this single-plugin config by path: converting it to a .conflist would break it; make the primary write a conflist`) };
    }
  }
  return { kind: 'patch', bytes: plan.bytes, destName };
}

/**
 * A config of the chained plugin alone is no network. linkerd's installer once wrote one, its
 * "interface mode" `01-linkerd-cni.conf`, and its later versions delete it at start: an operator
 * moving from them expects the same, and the runtime would load it first and fail every pod. That
 * name, in net.d itself, goes; any other such config is left alone and not ready, saying why.
 */
function pluginAlone(facts: ConfigFacts): ConfigStep {
  if (facts.name !== INTERFACE_MODE_LEFTOVER || !facts.plainInNetDir) {
    return { kind: 'outcome', outcome: problem('error', `${PLUGIN_ALONE} (left by linkerd-cni's interface mode?): remove it`) };
  }
  return { kind: 'remove', removed: { file: facts.name, why: "removed linkerd-cni's interface-mode config, as linkerd's installer does: the plugin alone is no network, and the runtime would load it first" } };
}
