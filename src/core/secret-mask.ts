/**
 * Masking a project's own secret values in output, as CI systems do: every value of at least
 * four characters, and its encoded forms (secret-encodings.ts), becomes `***` in build,
 * release-step, job and replica output before it is stored (DESIGN §6 "Secrets in output";
 * decisions 0261 and 0515). A value is masked as a terminal or the console shows it, too: one
 * split by a control character or an escape sequence (`sec\rret`, `sec\x1b[0mret`) is masked with
 * what is inside it.
 *
 * One regular expression holds every form of every value, longest first, so a line is scanned
 * once however many values a service has; a line without a control character (nearly all) is
 * masked by that one replace.
 */
import { formPatterns, literalPattern, type FormPattern } from "./secret-encodings";

/** What a masked value becomes. */
export const MASK = "***";

/** Values shorter than this are left alone: masking them would garble ordinary output. */
export const MIN_VALUE_CHARS = 4;

/** Room for control sequences inside one masked occurrence, beyond the longest form. */
const CONTROL_SLACK = 256;

/** Masks the values it was made for in a line of output. */
export interface SecretMasker {
  (line: string): string;
  /**
   * The most characters of raw output one masked occurrence spans (0: it masks nothing). A
   * stream that must cut an unfinished line keeps this many characters back (process.ts), so an
   * occurrence is never split by the cut.
   */
  readonly reach: number;
}

/** The masker that masks nothing. */
export const NO_MASK: SecretMasker = Object.assign((line: string) => line, { reach: 0 });

/**
 * What a terminal or the console does not show as text: CSI sequences (ESC [ or 8-bit CSI, up to
 * their final byte), OSC strings (a hyperlink, a title; up to BEL or ST), other escapes, and the
 * C0 and C1 control characters but tab.
 */
const CONTROL = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -/]*[0-~]?|[\x00-\x08\x0a-\x1f\x7f-\x9f]/g;
const HAS_CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/;

/** `line` with every occurrence masked that shows once its control sequences are dropped (the sequences inside it go too). */
function maskShown(line: string, re: RegExp): string {
  let shown = "";
  // Pairs: where a run of shown text starts in `shown`, and in `line`.
  const runs: number[] = [];
  let from = 0;
  const keep = (to: number) => {
    if (to > from) runs.push(shown.length, from);
    shown += line.slice(from, to);
  };
  for (const m of line.matchAll(CONTROL)) {
    keep(m.index);
    from = m.index + m[0].length;
  }
  keep(line.length);
  let k = 0;
  const inLine = (i: number) => {
    while (k + 2 < runs.length && runs[k + 2]! <= i) k += 2;
    return runs[k + 1]! + (i - runs[k]!);
  };
  let out = "";
  let last = -1;
  for (const m of shown.matchAll(re)) {
    const start = inLine(m.index);
    const end = inLine(m.index + m[0].length - 1) + 1;
    out += line.slice(Math.max(last, 0), start) + MASK;
    last = end;
  }
  return last < 0 ? line : out + line.slice(last);
}

/**
 * The masker of `values` (a service's secret values, a build's secret variables): each value, each
 * line of a multi-line value (output arrives line by line), and their encoded forms; values
 * shorter than MIN_VALUE_CHARS are left alone.
 */
export function secretMasker(values: readonly string[]): SecretMasker {
  const forms = new Map<string, FormPattern>();
  const add = (f: FormPattern) => forms.set(f.source, f);
  for (const value of values) {
    if (value.length < MIN_VALUE_CHARS) continue;
    if (value.includes("\n")) {
      for (const part of value.split(/\r?\n/).map((l) => l.trim())) {
        if (part.length >= MIN_VALUE_CHARS) add(literalPattern(part));
      }
    }
    for (const f of formPatterns(value)) add(f);
  }
  if (forms.size === 0) return NO_MASK;
  // Longest first: at a given place the first alternative that matches wins, so a value that contains another is masked whole.
  const sorted = [...forms.values()].sort((a, b) => b.min - a.min);
  const expression = (list: FormPattern[]) => (list.length === 0 ? null : new RegExp(list.map((f) => f.source).join("|"), "g"));
  const plain = expression(sorted.filter((f) => !f.percent))!;
  const percent = expression(sorted.filter((f) => f.percent));
  const reach = Math.max(...sorted.map((f) => f.max)) + CONTROL_SLACK;
  const maskWith = (line: string, re: RegExp) => {
    const out = line.replace(re, MASK);
    return HAS_CONTROL.test(out) ? maskShown(out, re) : out;
  };
  return Object.assign((line: string) => maskWith(percent && line.includes("%") ? maskWith(line, percent) : line, plain), { reach });
}
