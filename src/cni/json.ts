// JSON values and the structural equality the patcher uses to decide "already chained".
export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep equality of JSON values; key order does not matter (it does not to libcni either). */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (a instanceof ExactNumber || b instanceof ExactNumber) {
    return a instanceof ExactNumber && b instanceof ExactNumber && a.source === b.source;
  }
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]!));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key]!, b[key]!));
  }
  return false;
}

/**
 * A number as written. `1.0`, `1e3` and `9007199254740993` are different values to a Go plugin that
 * decodes into an int or an int64, while a JS number would call them equal to `1`, `1000` and 2^53.
 */
class ExactNumber {
  constructor(readonly source: string) {}
}

type ReviverWithSource = (this: unknown, key: string, value: unknown, context: { source?: string }) => unknown;

const keepNumberText: ReviverWithSource = (_key, value, context) =>
  typeof value === 'number' ? new ExactNumber(context.source ?? String(value)) : value;

/**
 * True when two JSON texts hold the same value: key order and whitespace aside, numbers compared as
 * written (JSON.parse's reviver sees each number's source text since Node 21). False for invalid text,
 * and for nesting too deep to compare: the caller then writes, which is always safe.
 */
export function sameJsonText(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    const reviver = keepNumberText as unknown as (key: string, value: unknown) => unknown;
    return jsonEqual(JSON.parse(a, reviver) as Json, JSON.parse(b, reviver) as Json);
  } catch {
    return false;
  }
}
