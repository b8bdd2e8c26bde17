/**
 * Reading one `OPS_*` value: trimmed text, a whole number in range, a boolean, a URL of given
 * schemes, a host:port, one of fixed choices. A bad value is a ConfigError naming the variable.
 * config.ts reads every setting with these and freezes the result.
 */

export class ConfigError extends Error {
  constructor(public readonly variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

export type Env = Record<string, string | undefined>;

export function str(env: Env, name: string): string | null {
  const v = env[name];
  if (v === undefined) return null;
  const trimmed = v.trim();
  return trimmed === "" ? null : trimmed;
}

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = str(env, name);
  if (v === null) return fallback;
  if (!/^-?\d+$/.test(v)) throw new ConfigError(name, `expected a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `expected a number from ${min} to ${max}, got ${n}`);
  return n;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const v = str(env, name);
  if (v === null) return fallback;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  throw new ConfigError(name, `expected 1/0, true/false, yes/no or on/off, got "${v}"`);
}

export function url(env: Env, name: string, protocols: string[]): string | null {
  const v = str(env, name);
  if (v === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    throw new ConfigError(name, `not a URL: "${redactUrl(v)}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.join(" or ")} URL, got "${parsed.protocol}"`);
  }
  return v;
}

/** Hide a password in a URL before it reaches an error message. */
function redactUrl(v: string): string {
  return v.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");
}

export function parseListen(raw: string, variable = "OPS_LISTEN"): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:]+\]|[^:\s]+)?:?(\d+)$/.exec(raw);
  if (!m) throw new ConfigError(variable, `expected host:port, got "${raw}"`);
  const host = (m[1] ?? "127.0.0.1").replace(/^\[|\]$/g, "");
  const port = Number(m[2]);
  if (port < 0 || port > 65535) throw new ConfigError(variable, `port out of range: ${port}`);
  return { host, port };
}

export function oneOf<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const v = (str(env, name) ?? fallback).toLowerCase();
  if (!(choices as readonly string[]).includes(v)) throw new ConfigError(name, `expected ${choices.join(" or ")}, got "${v}"`);
  return v as T;
}

/** Freeze an object and everything it holds. */
export function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object") {
    for (const v of Object.values(o as object)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
