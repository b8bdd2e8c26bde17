/**
 * The shapes of secrets: one rule set, written here from the token formats their issuers document,
 * that serves every place where ops looks for secrets in text it did not write (DESIGN §6 "Secrets
 * in output"): the build's secret scan of an image's files, the masking of build logs and service
 * output, and the scrubbing of telemetry. gitleaks' rule list was the anchor for which shapes
 * matter; the patterns and their examples (secret-shapes.test.ts) are this project's own.
 *
 * A rule is a global pattern, the lowercase keywords one of which any match contains (a cheap
 * filter before the pattern runs), an optional check of the candidate (the checksum of ops's own
 * tokens, AWS's documented placeholder keys, values too uniform to be random), and whether a hit
 * fails an image build (`blocksImage`). Only issuer-prefixed, high-entropy formats block an image:
 * JWTs, URLs with passwords, Google API keys (browser keys are public by design) and `key=value`
 * assignments sit in library docs and tests in every dependency tree, so they are masked in output
 * but do not fail a build (docs/decisions/0260-secret-shapes.md).
 *
 * A pattern's named groups `pre` and `post` are kept when the match is masked, so
 * `password=hunter2` becomes `password=[redacted]` and a URL keeps its user name and host.
 */
import { isWellFormedSecret, type SecretPrefix } from "./ids";

export interface SecretShape {
  /** Stable id, kebab-case ("aws-access-key-id"). */
  id: string;
  /** What a hit is, for a scan report, never with the value ("an AWS access key id"). */
  what: string;
  /** Lowercase literals one of which every match contains. */
  keywords: readonly string[];
  /** A cheaper pattern every match contains, tested before `pattern` runs (for rules whose keywords are common words). */
  hint?: RegExp;
  /** Global (and, where the format allows, case-sensitive) pattern of a match. */
  pattern: RegExp;
  /** Whether a candidate is really one: `secret` is the `secret` group when the pattern has one, else the whole match. */
  valid?(secret: string, match: string): boolean;
  /** `what` for this match, when the match says more (which ops token, which kind of key). */
  describe?(match: string, groups: Record<string, string | undefined>): string;
  /** A hit in an image's files fails the build; otherwise the shape is only masked in output. */
  blocksImage: boolean;
  /** How a match is masked, when keeping `pre`/`post` around the mark is not enough. */
  mask?(groups: Record<string, string | undefined>, mark: string): string;
}

/** Few distinct characters: a placeholder (`xxxx…`, `0000…`, `XXXX-XXXX`), not a random token. */
export function tooUniform(s: string, min = 6): boolean {
  const seen = new Set<string>();
  for (const c of s) {
    seen.add(c);
    if (seen.size >= min) return false;
  }
  return true;
}

const random = (secret: string) => !tooUniform(secret);
const notExample = (secret: string) => !/EXAMPLE/.test(secret) && random(secret);
const OPS_PREFIXES: readonly SecretPrefix[] = ["opss_", "opst_", "opsi_", "opsd_"];
const OPS_NAMES: Record<string, string> = {
  opss_: "an ops session token (opss_)",
  opst_: "an ops API token (opst_)",
  opsi_: "an ops install code (opsi_)",
  opsd_: "an ops device code (opsd_)",
};

/** Values of `key=value` pairs that say nothing: empty, placeholders, references to variables. */
const PLACEHOLDER = /^(?:\*+|x+|\.{3}|…|\[redacted\]?|<.*|\{\{[^{}]*\}\}|\$\{?[A-Za-z_][A-Za-z0-9_.]*\}?|%s|%v|null|nil|none|undefined|true|false)$/i;
/** Keys whose values are secrets whatever they look like. */
const STRONG_KEY = /pass|pwd|secret|credential/i;

function assignmentValue(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) return value.slice(1, -1);
  return value;
}

/** The private-key armour names (PEM, OpenSSH, PGP). */
const KEY_KIND = "(?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|ANY|PGP) )?PRIVATE KEY(?: BLOCK)?";

/**
 * Every rule, most specific first: a masked match is no longer there for the rules after it, so a
 * GitHub token in a URL's password is named as the token, and the generic `key=value` rule comes last.
 */
export const SECRET_SHAPES: readonly SecretShape[] = [
  {
    id: "private-key",
    what: "a private key",
    keywords: ["private key"],
    // A body and the matching END line, also inside a JSON or source string where newlines are `\n`.
    // A '-' in the body never starts "-----", so an attempt ends at the next armour line: linear time.
    pattern: new RegExp(`-----BEGIN (?<kind>${KEY_KIND})-----(?:\\\\r)?(?:\\\\n|\\s)(?:[A-Za-z0-9+/=\\s\\\\:,.]|-(?!----)){64,16384}?-----END \\k<kind>-----`, "g"),
    describe: (_m, g) => `a private key (${g.kind})`,
    blocksImage: true,
  },
  {
    id: "private-key-start",
    what: "the start of a private key",
    keywords: ["private key"],
    // Output cut after the BEGIN line (a log line, a truncated message): masked to the end of the text.
    pattern: new RegExp(`-----BEGIN ${KEY_KIND}-----[\\s\\S]*?(?:-----END ${KEY_KIND}-----|$)`, "g"),
    blocksImage: false,
  },
  {
    id: "ops-token",
    what: "an ops token",
    keywords: ["opss_", "opst_", "opsi_", "opsd_"],
    // No word boundaries: the checksum alone tells a token from chance (1 in 62^6), glued to other text or not.
    pattern: /ops[stid]_[0-9A-Za-z]{49}/g,
    valid: (s) => isWellFormedSecret(s, OPS_PREFIXES),
    describe: (m) => OPS_NAMES[m.slice(0, 5)] ?? "an ops token",
    blocksImage: true,
  },
  {
    id: "ops-token-shaped",
    what: "something shaped like an ops token",
    keywords: ["ops"],
    // Cut or altered copies of ops's tokens (any `ops<letters>_` prefix with a long base62 tail): masked, never trusted.
    pattern: /\bops[a-z]{1,4}_[A-Za-z0-9]{20,}/g,
    blocksImage: false,
  },
  {
    id: "aws-access-key-id",
    what: "an AWS access key id",
    keywords: ["akia", "asia", "abia", "acca"],
    pattern: /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/g,
    valid: notExample,
    blocksImage: true,
  },
  {
    id: "aws-secret-access-key",
    what: "an AWS secret access key",
    keywords: ["secret_access_key", "secretaccesskey", "secret-access-key"],
    pattern: /(?<pre>(?:aws_?)?secret[_-]?access[_-]?key["']?\s*[=:]\s*["']?)(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])/gi,
    valid: notExample,
    blocksImage: true,
  },
  {
    id: "github-token",
    what: "a GitHub token",
    keywords: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
    pattern: /\bgh[pousr]_[0-9A-Za-z]{36}\b/g,
    valid: random,
    blocksImage: true,
  },
  {
    id: "github-fine-grained-token",
    what: "a GitHub fine-grained personal access token",
    keywords: ["github_pat_"],
    pattern: /\bgithub_pat_[0-9A-Za-z]{22}_[0-9A-Za-z]{59}\b/g,
    valid: random,
    blocksImage: true,
  },
  {
    id: "gitlab-token",
    what: "a GitLab token",
    keywords: ["glpat-", "gldt-", "glrt-", "glptt-", "gloas-", "glcbt-", "glft-", "glsoat-", "glffct-", "glimt-", "glagent-"],
    pattern: /(?<![0-9A-Za-z_.-])gl(?:pat|dt|rt|ptt|oas|cbt|ft|soat|ffct|imt|agent)-[0-9A-Za-z_-]{20,300}(?:\.[0-9a-z]{9})?/g,
    valid: (s) => random(s.slice(s.indexOf("-") + 1)),
    blocksImage: true,
  },
  {
    id: "slack-token",
    what: "a Slack token",
    keywords: ["xox", "xapp-"],
    pattern: /(?<![0-9A-Za-z.-])(?:xox[abeoprs]|xoxe\.xox[bp]|xapp)-[0-9A-Za-z-]{10,250}/g,
    valid: (s) => random(s.slice(s.indexOf("-") + 1)),
    blocksImage: true,
  },
  {
    id: "slack-webhook",
    what: "a Slack webhook URL",
    keywords: ["hooks.slack.com"],
    pattern: /(?<pre>\bhooks\.slack\.com\/)(?<secret>(?:services|workflows|triggers)\/[A-Za-z0-9+/_-]{20,150})/g,
    valid: (s) => random(s),
    blocksImage: true,
  },
  {
    id: "discord-webhook",
    what: "a Discord webhook URL",
    keywords: ["discord"],
    pattern: /(?<pre>\bdiscord(?:app)?\.com\/api\/webhooks\/\d{5,30}\/)(?<secret>[A-Za-z0-9_-]{60,90})/g,
    valid: random,
    blocksImage: true,
  },
  {
    id: "stripe-live-key",
    what: "a Stripe live secret key",
    keywords: ["sk_live_", "rk_live_"],
    pattern: /\b[sr]k_live_[0-9A-Za-z]{20,247}\b/g,
    valid: (s) => random(s.slice(8)),
    blocksImage: true,
  },
  {
    id: "stripe-test-key",
    what: "a Stripe test secret key",
    keywords: ["sk_test_", "rk_test_"],
    pattern: /\b[sr]k_test_[0-9A-Za-z]{20,247}\b/g,
    valid: (s) => random(s.slice(8)),
    blocksImage: false,
  },
  {
    id: "google-api-key",
    what: "a Google API key",
    keywords: ["aiza"],
    pattern: /(?<![0-9A-Za-z_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g,
    valid: random,
    blocksImage: false,
  },
  {
    id: "npm-token",
    what: "an npm access token",
    keywords: ["npm_"],
    pattern: /\bnpm_[0-9A-Za-z]{36}\b/g,
    valid: (s) => random(s.slice(4)),
    blocksImage: true,
  },
  {
    id: "pypi-token",
    what: "a PyPI API token",
    keywords: ["pypi-age"],
    // A macaroon whose first caveat names the index: base64 of "pypi.org" or "test.pypi.org".
    pattern: /(?<![0-9A-Za-z_-])pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]{50,1000}/g,
    blocksImage: true,
  },
  {
    id: "sendgrid-key",
    what: "a SendGrid API key",
    keywords: ["sg."],
    pattern: /(?<![0-9A-Za-z_.-])SG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}(?![0-9A-Za-z_-])/g,
    valid: (s) => random(s.slice(3)),
    blocksImage: true,
  },
  {
    id: "openai-key",
    what: "an OpenAI API key",
    keywords: ["t3blbkfj"],
    // Every OpenAI secret key carries base64 "OpenAI" (T3BlbkFJ) in its middle.
    pattern: /(?<![0-9A-Za-z_-])sk-(?:(?:proj|svcacct|admin)-)?[0-9A-Za-z_-]{20,200}T3BlbkFJ[0-9A-Za-z_-]{20,200}/g,
    blocksImage: true,
  },
  {
    id: "anthropic-key",
    what: "an Anthropic API key",
    keywords: ["sk-ant-"],
    pattern: /(?<![0-9A-Za-z_-])sk-ant-(?:api|admin)\d{2}-[0-9A-Za-z_-]{80,120}/g,
    valid: (s) => random(s.slice(14)),
    blocksImage: true,
  },
  {
    id: "huggingface-token",
    what: "a Hugging Face access token",
    keywords: ["hf_"],
    pattern: /\bhf_[A-Za-z]{34}\b/g,
    valid: (s) => random(s.slice(3)),
    blocksImage: true,
  },
  {
    id: "digitalocean-token",
    what: "a DigitalOcean token",
    keywords: ["dop_v1_", "doo_v1_", "dor_v1_"],
    pattern: /\bdo[opr]_v1_[0-9a-f]{64}\b/g,
    valid: (s) => random(s.slice(7)),
    blocksImage: true,
  },
  {
    id: "vault-token",
    what: "a HashiCorp Vault token",
    keywords: ["hvs.", "hvb."],
    pattern: /(?<![0-9A-Za-z_.-])hv[sb]\.[0-9A-Za-z_-]{24,300}/g,
    valid: (s) => random(s.slice(4)),
    blocksImage: true,
  },
  {
    id: "shopify-token",
    what: "a Shopify access token",
    keywords: ["shpat_", "shpca_", "shppa_", "shpss_"],
    pattern: /\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b/g,
    valid: (s) => random(s.slice(6)),
    blocksImage: true,
  },
  {
    id: "age-secret-key",
    what: "an age secret key",
    keywords: ["age-secret-key-1"],
    pattern: /\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b/g,
    blocksImage: true,
  },
  {
    id: "azure-storage-key",
    what: "an Azure storage account key",
    keywords: ["accountkey="],
    pattern: /(?<pre>\bAccountKey=)(?<secret>[A-Za-z0-9+/]{86}==)/g,
    // Azurite's (the storage emulator's) account key is documented and the same everywhere.
    valid: (s) => random(s) && !s.startsWith("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq"),
    blocksImage: true,
  },
  {
    id: "jwt",
    what: "a JSON Web Token",
    keywords: ["eyj"],
    // Header and payload are base64url JSON objects, so both start `eyJ` ({"); the signature may be empty (alg none).
    pattern: /(?<![0-9A-Za-z_.-])eyJ[0-9A-Za-z_-]{8,}\.eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]*/g,
    blocksImage: false,
  },
  {
    id: "url-password",
    what: "a password in a URL",
    keywords: ["://"],
    hint: /:\/\/[^\s/?#@]{0,256}:[^\s/?#@]{1,256}@/,
    // scheme://user:password@host — the password goes, the rest stays. The match starts at "://"
    // (the scheme is checked looking back), which the engine finds far faster than a scheme.
    pattern: /(?<pre>:\/\/(?<=(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,30}:\/\/)[^\s/?#@:"'<>]{0,256}:)(?<secret>[^\s/?#@"'<>]{1,256})(?<post>@)/gi,
    valid: (s) => !PLACEHOLDER.test(s),
    blocksImage: false,
  },
  {
    id: "bearer-token",
    what: "a bearer token",
    keywords: ["bearer"],
    pattern: /(?<pre>\bbearer\s+)(?<secret>[A-Za-z0-9._~+/-]{8,4096}=*)/gi,
    blocksImage: false,
  },
  {
    id: "basic-credential",
    what: "an HTTP Basic credential",
    keywords: ["basic"],
    // A base64 run with a digit, + or /, so "basic authentication" stays.
    pattern: /(?<pre>\bbasic\s+)(?<secret>(?=[A-Za-z0-9+/]{0,4096}[0-9+/])[A-Za-z0-9+/]{12,4096}={0,2})/gi,
    blocksImage: false,
  },
  {
    id: "secret-assignment",
    what: "a value assigned to a secret-sounding name",
    keywords: ["pass", "pwd", "secret", "token", "key", "credential", "auth"],
    hint: /(?:pass|pwd|secret|token|key|credential|auth)[a-z0-9_.-]{0,64}["']?[ \t]{0,16}[=:]/i,
    // `name = value`, `name: value`, `"name": "value"` where the name says secret: *password*,
    // *secret*, *token*, *credential*, *_key, api key, auth. A quoted value keeps its quotes.
    pattern:
      /(?<pre>(?<q>["']?)(?<![a-z0-9_.-])(?<key>[a-z0-9_.-]{0,64}?(?:password|passwd|pwd|passphrase|secret|token|credential|api[_-]?key|apikey|access[_-]?key|private[_-]?key|[_.-]key|[_.-]auth)[a-z0-9_.-]{0,64})\k<q>[ \t]{0,16}[=:][ \t]{0,16})(?<secret>"(?:[^"\\\n]|\\.){0,4096}"|'[^'\n]{0,4096}'|[^\s&,;"'}\]]{1,4096})/gi,
    valid: (value, match) => {
      const v = assignmentValue(value);
      if (v === "" || PLACEHOLDER.test(v)) return false;
      const key = /^["']?([a-z0-9_.-]+)/i.exec(match)?.[1] ?? "";
      // `max_tokens=100`, `key_id: 42`: short numbers under a token or key name are counts and ids.
      return STRONG_KEY.test(key) || !/^\d{1,6}$/.test(v);
    },
    mask: (g, mark) => {
      const v = g.secret ?? "";
      const q = v[0] === '"' || v[0] === "'" ? v[0] : "";
      return `${g.pre}${q}${mark}${q}`;
    },
    blocksImage: false,
  },
];

/** The what of an ops token, by its prefix. */
export function opsTokenName(token: string): string {
  return OPS_NAMES[token.slice(0, 5)] ?? "an ops token";
}
