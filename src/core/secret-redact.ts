/**
 * Applying the secret shapes (secret-shapes.ts) to text: masking them in output (build logs,
 * service output, telemetry), finding the ones that fail an image build, and following a private
 * key across the lines of a log, where it arrives one line at a time.
 *
 * Cost: most text holds none of the shapes' keywords, and one pass over it (`KeywordIndex`) sends
 * it back untouched; otherwise only the rules whose keywords occur run. Every pattern runs in
 * time linear in the text (no pattern can restart inside a run of its own characters), so hostile
 * telemetry cannot make masking slow (secret-redact.test.ts feeds each rule its worst case).
 */
import { SECRET_SHAPES, type SecretShape } from "./secret-shapes";

/** What a masked shape is replaced by (a project's own secret values become `***`). */
export const REDACTED = "[redacted]";

const lowByte = (c: number) => (c >= 65 && c <= 90 ? c + 32 : c & 0xff);

/** Whether `keyword` (lowercase ASCII) is at `at` in `text`, ignoring ASCII case. */
function keywordAt(text: string, keyword: string, at: number): boolean {
  if (at + keyword.length > text.length) return false;
  for (let j = 0; j < keyword.length; j++) if (lowByte(text.charCodeAt(at + j)) !== keyword.charCodeAt(j)) return false;
  return true;
}

/**
 * Which shapes a text may hold, by their keywords. The keywords are indexed by their first two
 * characters (low bytes, ASCII letters lowercased): one pass over the text looks each pair up in a
 * table, and only where a pair starts a keyword is the keyword compared. On log lines this is
 * several times faster in JavaScriptCore than one regular expression of all the keywords (0.2 µs
 * against 0.6 µs for a line of 80 characters, with or without the `i` flag), and it copies nothing.
 * On long texts (a 1 MiB chunk of an image's file) the expressions themselves are faster than
 * this pass (the engine finds their literal starts natively, about 0.2 ms a MiB each), so the scan
 * runs the blocking shapes' patterns directly there; on short ones each pattern's fixed cost per
 * call dominates, and the pass (over the blocking shapes' keywords only) saves most calls.
 */
class KeywordIndex {
  private readonly pairs = new Uint8Array(65536);
  /** Per pair, its keywords, each with the indexes of the shapes it points to. */
  private readonly byPair = new Map<number, Array<{ keyword: string; shapes: number[] }>>();
  /** Per shape, the call that last found one of its keywords (no allocation per call). */
  private readonly marks: Uint32Array;
  private call = 0;

  constructor(readonly shapes: readonly SecretShape[]) {
    this.marks = new Uint32Array(shapes.length);
    shapes.forEach((shape, i) => {
      for (const keyword of shape.keywords) {
        const pair = (lowByte(keyword.charCodeAt(0)) << 8) | lowByte(keyword.charCodeAt(1));
        this.pairs[pair] = 1;
        const list = this.byPair.get(pair) ?? [];
        const entry = list.find((e) => e.keyword === keyword);
        if (entry) entry.shapes.push(i);
        else list.push({ keyword, shapes: [i] });
        this.byPair.set(pair, list);
      }
    });
  }

  /** The shapes whose keywords (and hint) the text holds, in rule order. */
  candidates(text: string): SecretShape[] {
    if (text.length < SHORTEST) return [];
    const call = (this.call = (this.call + 1) >>> 0 || 1);
    let any = false;
    let prev = lowByte(text.charCodeAt(0));
    for (let i = 1; i < text.length; i++) {
      const c = lowByte(text.charCodeAt(i));
      const pair = (prev << 8) | c;
      if (this.pairs[pair] === 1) {
        for (const e of this.byPair.get(pair)!) {
          if (!keywordAt(text, e.keyword, i - 1)) continue;
          for (const s of e.shapes) this.marks[s] = call;
          any = true;
        }
      }
      prev = c;
    }
    if (!any) return [];
    const out: SecretShape[] = [];
    for (let i = 0; i < this.shapes.length; i++) {
      const s = this.shapes[i];
      if (this.marks[i] === call && (!s.hint || s.hint.test(text))) out.push(s);
    }
    return out;
  }
}

/** No shape matches fewer characters (`pwd=x`). */
const SHORTEST = 5;

type Groups = Record<string, string | undefined>;

function groupsOf(args: unknown[]): Groups | undefined {
  const last = args[args.length - 1];
  return last !== null && typeof last === "object" ? (last as Groups) : undefined;
}

function isReal(shape: SecretShape, match: string, groups: Groups | undefined): boolean {
  return !shape.valid || shape.valid(groups?.secret ?? match, match);
}

const ALL = new KeywordIndex(SECRET_SHAPES);
const BLOCKING = new KeywordIndex(SECRET_SHAPES.filter((s) => s.blocksImage));
/** Past this length the patterns run without the keyword pass (see KeywordIndex). */
const LONG_TEXT = 64 * 1024;

/** `text` with every secret shape masked (the parts a rule keeps, such as a key name or a URL's host, stay). */
export function redactSecrets(text: string, mark = REDACTED): string {
  let out = text;
  for (const shape of ALL.candidates(text)) {
    out = out.replace(shape.pattern, (...args: unknown[]) => {
      const match = args[0] as string;
      const groups = groupsOf(args);
      if (!isReal(shape, match, groups)) return match;
      if (shape.mask) return shape.mask(groups ?? {}, mark);
      return `${groups?.pre ?? ""}${mark}${groups?.post ?? ""}`;
    });
  }
  return out;
}

/** One shape found in a text. */
export interface SecretFound {
  shape: SecretShape;
  /** Offset of the match in the text. */
  index: number;
  /** What was found, never the value ("a GitHub token"). */
  what: string;
}

/** The shapes in `text` that fail an image build (or every shape, with `all`), in rule order. */
export function findSecrets(text: string, all = false): SecretFound[] {
  const found: SecretFound[] = [];
  const shapes = all ? ALL.candidates(text) : text.length > LONG_TEXT ? BLOCKING.shapes : BLOCKING.candidates(text);
  for (const shape of shapes) {
    // exec on the shared pattern rather than matchAll, which copies the expression on every call.
    const re = shape.pattern;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (m[0] === "") re.lastIndex++;
      const groups = m.groups as Groups | undefined;
      if (!isReal(shape, m[0], groups)) continue;
      found.push({ shape, index: m.index, what: shape.describe ? shape.describe(m[0], groups ?? {}) : shape.what });
    }
    re.lastIndex = 0;
  }
  return found;
}

const KEY_BEGIN = /-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|ANY|PGP) )?PRIVATE KEY(?: BLOCK)?-----/;
const KEY_END = /-----END (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|ANY|PGP) )?PRIVATE KEY(?: BLOCK)?-----/;
/** A line of a key's body: base64, an armour header (`Proc-Type: …`, `Version: …`), a PGP checksum, or empty. */
const KEY_BODY = /^(?:[A-Za-z0-9+/=]{1,128}|[A-Za-z-]{1,40}: .{0,200}|=[A-Za-z0-9+/]{4})?$/;
/** A key's body is never longer than this many lines (a 16 384-bit RSA key is about 200). */
const MAX_KEY_LINES = 400;

/**
 * Masks secret shapes in a stream of lines, one line at a time: a private key printed line by
 * line is masked from its BEGIN line through its END line (or to the first line that cannot be
 * part of a key), which no single line shows. One per stream (a build's log, a replica's output).
 */
export class SecretLineFilter {
  private keyLines = -1;

  constructor(private readonly mark = REDACTED) {}

  /** The line with its secrets masked. */
  filter(line: string): string {
    if (this.keyLines >= 0) {
      if (KEY_END.test(line)) {
        this.keyLines = -1;
        return this.mark;
      }
      if (++this.keyLines <= MAX_KEY_LINES && KEY_BODY.test(line.trim())) return this.mark;
      this.keyLines = -1;
    }
    const begin = KEY_BEGIN.exec(line);
    if (begin && !KEY_END.test(line.slice(begin.index))) this.keyLines = 0;
    return redactSecrets(line, this.mark);
  }
}
