// The values the environment may hold (config.ts), as zod/mini schemas: paths, names, addresses,
// numbers and Kubernetes' names. Each check's message names what was expected.
import path from 'node:path';
import * as z from 'zod/mini';

// Kubernetes manifests often carry `value: ""`; an empty variable means "use the default".
export const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
export const optional = <T extends z.ZodMiniType>(schema: T) => z.pipe(z.transform(unsetIfEmpty), z.optional(schema));
export const withDefault = <T extends z.ZodMiniType>(schema: T, fallback: string) =>
  z.pipe(
    z.transform<unknown, unknown>((v) => unsetIfEmpty(v) ?? fallback),
    schema,
  );

// A control character in a name or path would forge log and report lines, and no CNI writes one.
const CONTROL = /[\u0000-\u001f\u007f]/;
export const noControl = z.refine<string>((s) => !CONTROL.test(s), 'must not contain control characters');
export const fileName = (message: string) => z.string().check(z.regex(/^[^/\0]+$/, message), noControl);
export const absolutePath = z.string().check(z.refine((p) => path.isAbsolute(p), 'expected an absolute path'), noControl);

/** An IPv4 address in dotted-quad form. */
function isIPv4(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255);
}

/** An IPv6 address (the WHATWG URL parser validates it: no module to load at start). */
function isIPv6(s: string): boolean {
  if (!s.includes(':') || /[[\]/%]/.test(s)) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

// RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens, 253 bytes at most.
const HOST_NAME = /^(?=.{1,253}\.?$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.?$/;
// (A name of digits and dots only must be an IPv4 address: no top-level domain is all-numeric.)
export const hostOrAddress = z.string().check(z.refine((h) => isIPv4(h) || isIPv6(h) || (HOST_NAME.test(h) && !/^[\d.]+$/.test(h)), 'expected a host name or an IP address'));
export const address = z.string().check(z.refine((h) => isIPv4(h) || isIPv6(h), 'expected an IP address such as :: (any, dual-stack), 0.0.0.0 or 127.0.0.1'));

export const integer = (min: number, max: number) =>
  z
    .pipe(z.string().check(z.regex(/^\d+$/, `expected a whole number from ${min} to ${max}`)), z.transform(Number))
    .check(z.refine((n) => n >= min && n <= max, `expected a whole number from ${min} to ${max}`));
export const boolean = z.pipe(
  z.pipe(
    z.pipe(z.string(), z.transform((s) => s.toLowerCase())),
    z.enum(['true', 'false'], { message: 'expected true or false' }),
  ),
  z.transform((s) => s === 'true'),
);

// Kubernetes' names (apimachinery validation): a DNS-1123 subdomain, a label, a qualified taint key.
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const TAINT_KEY = /^((?=.{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
