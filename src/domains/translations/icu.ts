/**
 * Values are ICU MessageFormat messages, parsed by FormatJS's parser (the one intl-messageformat
 * and react-intl use), so what ops accepts is what those runtimes format. A translation must use
 * the same arguments as its source text: an argument the code passes but the text drops loses
 * information; one the text adds but the code never passes breaks formatting.
 */
import { parse, TYPE, type MessageFormatElement } from "@formatjs/icu-messageformat-parser";
import { OpsError } from "../../core/errors";

export type IcuResult = { ok: true; args: Set<string> } | { ok: false; reason: string };

function collect(elements: MessageFormatElement[], out: Set<string>): void {
  for (const el of elements) {
    switch (el.type) {
      case TYPE.argument:
      case TYPE.number:
      case TYPE.date:
      case TYPE.time:
        out.add(el.value);
        break;
      case TYPE.select:
      case TYPE.plural:
        out.add(el.value);
        for (const option of Object.values(el.options)) collect(option.value, out);
        break;
      case TYPE.tag:
        collect(el.children, out);
        break;
    }
  }
}

/** Parse `value`; its argument names, or why it is not a message. */
export function checkMessage(value: string): IcuResult {
  try {
    const args = new Set<string>();
    collect(parse(value), args);
    return { ok: true, args };
  } catch (e) {
    const err = e as { message?: string; location?: { start?: { offset?: number } } };
    const at = err.location?.start?.offset;
    const what = (err.message ?? "syntax error").toLowerCase().replace(/_/g, " ");
    return { ok: false, reason: `is not a valid ICU message: ${what}${at === undefined ? "" : ` at character ${at + 1}`}` };
  }
}

/** Why `args` disagree with the source's, or null when they are the same set. */
export function placeholderMismatch(args: ReadonlySet<string>, sourceArgs: ReadonlySet<string>, sourceLocale: string): string | null {
  const missing = [...sourceArgs].filter((a) => !args.has(a)).sort();
  const extra = [...args].filter((a) => !sourceArgs.has(a)).sort();
  if (missing.length === 0 && extra.length === 0) return null;
  const parts: string[] = [];
  if (missing.length > 0) parts.push(`lacks ${missing.map((a) => `{${a}}`).join(", ")}`);
  if (extra.length > 0) parts.push(`has ${extra.map((a) => `{${a}}`).join(", ")} that the source does not`);
  return `placeholders differ from the source locale (${sourceLocale}): it ${parts.join(" and ")}`;
}

/**
 * 422 unless `value` parses and (when a source text is given) uses exactly its arguments.
 * `source` is the source locale's text of the same key, or null when there is none yet.
 */
export function assertMessage(value: string, source: { value: string; locale: string } | null, field = "value"): void {
  const mine = checkMessage(value);
  if (!mine.ok) throw messageError(field, mine.reason);
  if (source === null) return;
  const theirs = checkMessage(source.value);
  // A stored source that no longer parses (written before a parser upgrade) cannot be compared.
  if (!theirs.ok) return;
  const mismatch = placeholderMismatch(mine.args, theirs.args, source.locale);
  if (mismatch) throw messageError(field, mismatch);
}

export function messageError(field: string, reason: string): OpsError {
  return new OpsError("validation_failed", `${field}: ${reason}`, { fields: [{ path: field, message: reason }] });
}
