/**
 * A program that prints a service's secret values the ways an app, a release step or a job might
 * (plain, base64, hex, percent-encoded with every byte escaped, split by an ANSI escape), each
 * behind a label that stays readable, and the check that output shows none of them.
 */
import { expect } from "bun:test";

/** Prints, for each variable named on its command line that is set, one line per form; with `loop`, again every 200 ms. */
const PRINTER_JS = String.raw`
const [label, loop, ...names] = process.argv.slice(2);
const say = (tag) => {
  for (const k of names) {
    const s = process.env[k];
    if (!s) continue;
    const forms = {
      plain: s,
      base64: Buffer.from(s).toString("base64"),
      hex: Buffer.from(s).toString("hex"),
      percent: [...Buffer.from(s)].map((b) => "%" + b.toString(16).padStart(2, "0").toUpperCase()).join(""),
      ansi: s.slice(0, 4) + "\x1b[0m" + s.slice(4),
    };
    for (const [n, v] of Object.entries(forms)) console.log(tag + " " + k + " " + n + ": " + v);
  }
  console.log(tag + " done");
};
if (loop === "loop") { let i = 0; setInterval(() => say(label + " " + i++), 200); } else say(label);
`;

/** The shell command that runs the printer with node: `<label> <k> form: …` for each of `names`. */
export function printCommand(label: string, names: string[], opts: { loop?: boolean } = {}): string {
  return `node -e "eval(atob(process.argv[1]))" ${Buffer.from(PRINTER_JS).toString("base64")} ${label} ${opts.loop ? "loop" : "once"} ${names.join(" ")}`;
}

/** The forms of `secret` the printer writes (the ANSI split is checked on the text as a terminal shows it). */
export function printedForms(secret: string): string[] {
  const bytes = [...Buffer.from(secret)];
  return [secret, Buffer.from(secret).toString("base64"), Buffer.from(secret).toString("hex"), bytes.map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join("")];
}

/** What a terminal shows of a line: its escape sequences and control characters dropped. */
export const shown = (line: string) => line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/[\x00-\x08\x0a-\x1f\x7f]/g, "");

/**
 * `lines` hold the printer's lines under `label` for every variable of `masked` (each form a `***`)
 * and none of their forms; variables of `shownAsIs` (not secret) are printed unmasked.
 */
export function expectMasked(lines: readonly string[], label: string, masked: Record<string, string>, shownAsIs: Record<string, string> = {}): void {
  const text = lines.map(shown).join("\n");
  for (const [name, secret] of Object.entries(masked)) {
    for (const form of ["plain", "base64", "hex", "percent", "ansi"]) {
      const line = lines.find((l) => l.includes(`${label} ${name} ${form}: `));
      expect(line, `${label} ${name} ${form}`).toBeDefined();
      expect(shown(line!), `${label} ${name} ${form}`).toEndWith(`${name} ${form}: ***`);
    }
    for (const form of printedForms(secret)) expect(text).not.toContain(form);
  }
  for (const [name, value] of Object.entries(shownAsIs)) expect(text).toContain(`${label} ${name} plain: ${value}`);
}
