// A string field of a Go struct as encoding/json fills it from a JSON object: how libcni reads a
// plugin's `type` (types.PluginConf). Go matches a member to the field by its key in any case (the
// key's escapes decoded, case folded), a later member overwrites an earlier one, and a null leaves the
// field as it was. libcni decodes a single-plugin `.conf` straight from its text; a list's plugins it
// decodes into maps first and encodes again (libcni/conf.go, NetworkConfFromBytes), which keeps the
// last member of each exact key and writes the keys sorted. Pure.
import { decodeString, foldKey, type JsonMember, type JsonNode } from './json-spans.js';

/** The order in which Go sets the field from the members: the text's, or a map's sorted keys. */
export type MemberOrder = 'text' | 'sorted';

const BACKSLASH = 0x5c;

/** True when the member's key is `field` (lower-case ASCII letters) in Go's folding. */
function keyFolds(bytes: Uint8Array, member: JsonMember, field: string): boolean {
  const { keyStart, keyEnd } = member;
  const sameLength = keyEnd - keyStart - 2 === field.length;
  let mismatch = !sameLength;
  for (let j = keyStart + 1; j < keyEnd - 1; j++) {
    const c = bytes[j]!;
    // Escapes or non-ASCII: decoded and folded as Go folds keys (json-spans.ts foldKey).
    if (c >= 0x80 || c === BACKSLASH) return foldKey(decodeString(bytes, keyStart, keyEnd)) === field;
    if (mismatch) continue;
    // A letter in either case: bit 0x20 tells them apart. Anything else cannot fold to a letter.
    const isLetter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!isLetter || (c | 0x20) !== field.charCodeAt(j - keyStart - 1)) mismatch = true;
  }
  return !mismatch;
}

const isNull = (bytes: Uint8Array, node: JsonNode) => node.kind === 'literal' && bytes[node.start] === 0x6e;

/**
 * The member value Go sets the field `field` (lower-case ASCII letters) from when it decodes `node`:
 * the last that is not null, in `order`. undefined when none sets it.
 */
export function goFieldValue(bytes: Uint8Array, node: JsonNode, field: string, order: MemberOrder): JsonNode | undefined {
  const members = node.members;
  if (members === undefined) return undefined;
  let last: JsonMember | undefined;
  let matches = 0;
  for (const member of members) {
    if (!keyFolds(bytes, member, field)) continue;
    matches++;
    if (!isNull(bytes, member.value)) last = member;
  }
  // A map keeps the last member of each exact key, null or not, and sorts the keys.
  if (order === 'sorted' && matches > 1) last = lastBySortedKey(bytes, members, field);
  return last?.value;
}

/** The string Go leaves in the field; undefined when none is set, or when the value is no string (Go's decode fails). */
export function goStringField(bytes: Uint8Array, node: JsonNode, field: string, order: MemberOrder): string | undefined {
  const value = goFieldValue(bytes, node, field, order);
  return value?.kind === 'string' ? decodeString(bytes, value.start, value.end) : undefined;
}

/** Of the members whose keys fold to `field`: each exact key's last, in the keys' byte order; the last not null. */
function lastBySortedKey(bytes: Uint8Array, members: readonly JsonMember[], field: string): JsonMember | undefined {
  const byKey = new Map<string, JsonMember>();
  for (const member of members) if (keyFolds(bytes, member, field)) byKey.set(decodeString(bytes, member.keyStart, member.keyEnd), member);
  const keys = [...byKey.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  let last: JsonMember | undefined;
  for (const key of keys) if (!isNull(bytes, byKey.get(key)!.value)) last = byKey.get(key);
  return last;
}
