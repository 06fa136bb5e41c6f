// The plugin we chain, as configured (CNI_NETWORK_CONFIG): validated once at start, and kept both as
// written and compacted, for pretty and single-line configs.
import { decodeString, lastMember } from './json-spans.js';
import { ConfigParseError, scanOrRefuse } from './scan-config.js';

/** The plugin we chain: its text exactly as configured (placeholders substituted) and its type. */
export interface ChainedPlugin {
  type: string;
  /** The configured text, surrounding whitespace trimmed. */
  text: string;
  /** The same value with no insignificant whitespace, for single-line configs. */
  compact: string;
}

/** Validates the plugin's own config text; throws ConfigParseError when it cannot be chained. */
export function parsePlugin(text: string): ChainedPlugin {
  const bytes = Buffer.from(text);
  const root = scanOrRefuse(bytes, 1);
  const type = root.kind === 'object' ? lastMember(bytes, root, 'type') : undefined;
  const typeName = type?.kind === 'string' ? decodeString(bytes, type.start, type.end) : '';
  if (typeName === '') throw new ConfigParseError('expected a JSON object with a non-empty string "type"');
  const trimmed = bytes.subarray(root.start, root.end).toString('utf8');
  return { type: typeName, text: trimmed, compact: compactJson(trimmed) };
}

/** `text` without whitespace outside strings (the value and its tokens unchanged). */
export function compactJson(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') {
      out += c;
    }
  }
  return out;
}
