/**
 * Every secret shape against its own positive and negative examples. A positive example is found
 * by its rule and masked (the secret part is gone from the output); a negative one is not found by
 * that rule. Tokens are generated here from each issuer's documented format (prefix, alphabet,
 * length), never pasted, so no real credential sits in the source. A rule without examples fails.
 */
import { describe, test, expect } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { newSecret } from "./ids";
import { SECRET_SHAPES } from "./secret-shapes";
import { findSecrets, redactSecrets, REDACTED } from "./secret-redact";
import { fakeChars, DIGITS, UPPER, LOWER, ALNUM, URLSAFE, B64, HEX } from "../../test/fake-tokens";

const fake = fakeChars(7);

const b64url = (s: string) => Buffer.from(s).toString("base64url");
const pem = (label: string, body: string) => `-----BEGIN ${label}-----\n${body.match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----`;
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
const pkcs8 = ec.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
const pkcs1 = rsa.privateKey.export({ type: "pkcs1", format: "pem" }) as string;
const spki = ec.publicKey.export({ type: "spki", format: "pem" }) as string;
const bodyLine = (p: string) => p.split("\n")[1];
const opensshBody = fake(300, B64);
const pgpBody = fake(400, B64);
const ghs = `ghs_${fake(36)}`;
const jwt = `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url('{"sub":"1234567890","name":"A","iat":1516239022}')}.${fake(43, URLSAFE)}`;
const awsSecret = fake(40, B64);
const dbPassword = `Pg-${fake(20)}`;
const opsToken = newSecret("opst_");
const discordSecret = fake(68, URLSAFE);
const bearer = fake(40, URLSAFE);
const azureKey = `${fake(86, B64)}==`;
const deviceCode = newSecret("opsd_");
const badChecksum = opsToken.slice(0, -1) + (opsToken.endsWith("A") ? "B" : "A");

interface Example {
  text: string;
  /** The part that must be gone once masked (default: the whole text). */
  secret?: string;
}

const EXAMPLES: Record<string, { positive: Example[]; negative: string[] }> = {
  "private-key": {
    positive: [
      { text: `# deploy key\n${pkcs8}`, secret: bodyLine(pkcs8) },
      { text: JSON.stringify({ type: "service_account", private_key: pkcs1 }), secret: bodyLine(pkcs1) },
      { text: pem("OPENSSH PRIVATE KEY", opensshBody), secret: opensshBody.slice(0, 64) },
      { text: `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${pgpBody.match(/.{1,64}/g)!.join("\n")}\n=${fake(4, B64)}\n-----END PGP PRIVATE KEY BLOCK-----`, secret: pgpBody.slice(64, 128) },
    ],
    negative: [spki, pem("CERTIFICATE", fake(300, B64)), 'if (text.startsWith("-----BEGIN PRIVATE KEY-----")) parse(text);\nconst END = "-----END PRIVATE KEY-----";', `-----BEGIN PRIVATE KEY-----\n${fake(100, B64)}\n-----END RSA PRIVATE KEY-----`],
  },
  "private-key-start": {
    positive: [{ text: `key follows\n-----BEGIN RSA PRIVATE KEY-----\n${bodyLine(pkcs1)}`, secret: bodyLine(pkcs1) }, { text: "-----BEGIN EC PRIVATE KEY-----" }],
    negative: [spki, "-----BEGIN CERTIFICATE-----", "BEGIN PRIVATE KEY"],
  },
  "ops-token": {
    positive: [{ text: `const key = "${opsToken}";`, secret: opsToken }, { text: `glued${deviceCode}glued`, secret: deviceCode.slice(5) }],
    negative: [`fake ${badChecksum}`, `opst_${"x".repeat(49)}`, "opst_ is the prefix of an API token"],
  },
  "ops-token-shaped": {
    positive: [{ text: `cookie opss_${"A".repeat(30)}`, secret: "AAAAAAAAAAAAAAAAAAAA" }, { text: `cut ${badChecksum.slice(0, 30)}`, secret: badChecksum.slice(5, 30) }],
    negative: ["ops_team on call", "opsx_short", "the ops.build/7 target"],
  },
  "aws-access-key-id": {
    positive: [{ text: `AKIA${fake(16, UPPER + "234567")}`, secret: "AKIA" }, { text: `creds: ASIA${fake(16, UPPER + "234567")} expires soon`, secret: "ASIA" }],
    negative: ["AKIAIOSFODNN7EXAMPLE", `AKIA${fake(15, UPPER)}`, `akia${fake(16, LOWER)}`, "Asia/Tokyo"],
  },
  "aws-secret-access-key": {
    positive: [{ text: `aws_secret_access_key=${awsSecret}`, secret: awsSecret }, { text: `{"AccessKeyId":"x","SecretAccessKey": "${awsSecret}"}`, secret: awsSecret }],
    negative: ["aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", `aws_secret_access_key=${fake(20, B64)}`, "set the secret access key in your profile"],
  },
  "github-token": {
    positive: [{ text: `ghp_${fake(36)}` }, { text: `token ${ghs} for the app`, secret: ghs }, { text: `gho_${fake(36)}` }, { text: `ghu_${fake(36)}` }, { text: `ghr_${fake(36)}` }],
    negative: [`ghp_${"x".repeat(36)}`, `ghp_${fake(20)}`, `ghx_${fake(36)}`],
  },
  "github-fine-grained-token": {
    positive: [{ text: `GH_TOKEN github_pat_${fake(22)}_${fake(59)}`, secret: "github_pat_" }],
    negative: [`github_pat_${fake(10)}`, "the github_pat_ prefix"],
  },
  "gitlab-token": {
    positive: [{ text: `glpat-${fake(20, URLSAFE)}` }, { text: `glpat-${fake(27, URLSAFE)}.01${fake(7, DIGITS + LOWER)}` }, { text: `deploy gldt-${fake(20, URLSAFE)}`, secret: "gldt-" }, { text: `glrt-${fake(20, URLSAFE)}` }],
    negative: ["glpat-xxxxxxxxxxxxxxxxxxxx", "glpat-short", "see glpat-* tokens in the docs"],
  },
  "slack-token": {
    positive: [{ text: `xoxb-${fake(12, DIGITS)}-${fake(13, DIGITS)}-${fake(24)}` }, { text: `SLACK=xoxp-${fake(11, DIGITS)}-${fake(32)}`, secret: "xoxp-" }, { text: `xapp-1-A${fake(10, UPPER + DIGITS)}-${fake(13, DIGITS)}-${fake(64, HEX)}` }],
    negative: ["xoxb-xxxxxxxxxxxxxxxx", "hugs xoxo", "xoxb-short"],
  },
  "slack-webhook": {
    positive: [{ text: `POST https://hooks.slack.com/services/T${fake(8, UPPER + DIGITS)}/B${fake(8, UPPER + DIGITS)}/${fake(24)}`, secret: "/B" }],
    negative: ["https://hooks.slack.com/services/", "https://api.slack.com/apps"],
  },
  "discord-webhook": {
    positive: [{ text: `https://discord.com/api/webhooks/${fake(18, DIGITS)}/${discordSecret}`, secret: discordSecret }],
    negative: ["https://discord.com/api/webhooks/123/abc", "https://discord.com/channels/1/2"],
  },
  "stripe-live-key": {
    positive: [{ text: `sk_live_${fake(24)}` }, { text: `STRIPE=rk_live_${fake(99)}`, secret: "rk_live_" }],
    negative: [`sk_live_${"x".repeat(24)}`, `pk_live_${fake(24)}`, "sk_live_ keys start with"],
  },
  "stripe-test-key": {
    positive: [{ text: `sk_test_${fake(24)}` }],
    negative: [`pk_test_${fake(24)}`, `sk_test_${"0".repeat(24)}`],
  },
  "google-api-key": {
    positive: [{ text: `key=AIza${fake(35, URLSAFE)}`, secret: "AIza" }],
    negative: [`AIza${fake(20, URLSAFE)}`, `AIza${"x".repeat(35)}`],
  },
  "npm-token": {
    positive: [{ text: `//registry.npmjs.org/:_authToken=npm_${fake(36)}`, secret: "npm_" }],
    negative: ["npm_config_userconfig=/root/.npmrc", `npm_${"0".repeat(36)}`],
  },
  "pypi-token": {
    positive: [{ text: `password = pypi-AgEIcHlwaS5vcmc${fake(70, URLSAFE)}`, secret: "pypi-AgEI" }, { text: `pypi-AgENdGVzdC5weXBpLm9yZw${fake(60, URLSAFE)}` }],
    negative: [`pypi-AgEIcHlwaS5vcmc${fake(10, URLSAFE)}`, "pypi-package-name"],
  },
  "sendgrid-key": {
    positive: [{ text: `SG.${fake(22, URLSAFE)}.${fake(43, URLSAFE)}` }],
    negative: ["SG.short.x", "msg.send(to)"],
  },
  "openai-key": {
    positive: [{ text: `OPENAI_API_KEY=sk-proj-${fake(40, URLSAFE)}T3BlbkFJ${fake(40, URLSAFE)}`, secret: "T3BlbkFJ" }, { text: `sk-${fake(20)}T3BlbkFJ${fake(20)}` }],
    negative: [`sk-${fake(48)}`, "T3BlbkFJ"],
  },
  "anthropic-key": {
    positive: [{ text: `sk-ant-api03-${fake(93, URLSAFE)}AA` }],
    negative: ["sk-ant-api03-short", `sk-ant-api03-${"x".repeat(95)}`],
  },
  "huggingface-token": {
    positive: [{ text: `HF_TOKEN=hf_${fake(34, UPPER + LOWER)}`, secret: "hf_" }],
    negative: [`hf_${fake(20, LOWER)}`, "from huggingface_hub import hf_hub_download"],
  },
  "digitalocean-token": {
    positive: [{ text: `dop_v1_${fake(64, HEX)}` }, { text: `doo_v1_${fake(64, HEX)}` }],
    negative: [`dop_v1_${"0".repeat(64)}`, "dop_v1_abc"],
  },
  "vault-token": {
    positive: [{ text: `VAULT_TOKEN=hvs.${fake(90, URLSAFE)}`, secret: "hvs." }],
    negative: ["hvs.short", "hvs.xxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
  },
  "shopify-token": {
    positive: [{ text: `shpat_${fake(32, HEX)}` }, { text: `shpss_${fake(32, HEX)}` }],
    negative: [`shpat_${"0".repeat(32)}`, "shpat_ tokens"],
  },
  "age-secret-key": {
    positive: [{ text: `AGE-SECRET-KEY-1${fake(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")}` }],
    negative: [`age1${fake(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l")}`, "AGE-SECRET-KEY-1"],
  },
  "azure-storage-key": {
    positive: [{ text: `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${azureKey};EndpointSuffix=core.windows.net`, secret: azureKey }],
    // Azurite's documented development key is the same on every machine.
    negative: ["AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "AccountKey=;"],
  },
  jwt: {
    positive: [{ text: jwt }, { text: `session=${jwt}; Path=/`, secret: jwt }],
    negative: ["eyJhbGciOiJIUzI1NiJ9", "eyJ.eyJ.x", "keyJson.eyJustify"],
  },
  "url-password": {
    positive: [{ text: `connecting to postgres://app:${dbPassword}@db.internal:5432/app`, secret: dbPassword }, { text: `git clone https://x-access-token:${ghs}@github.com/o/r.git`, secret: ghs }],
    negative: ["https://example.com:8443/path", "ssh://git@github.com/org/repo", "postgres://user@db/app", "postgres://user:${DB_PASSWORD}@db/app", "redis://:***@cache:6379"],
  },
  "bearer-token": {
    positive: [{ text: `Authorization: Bearer ${bearer}`, secret: bearer }],
    negative: ["the bearer of bad news", "Bearer short"],
  },
  "basic-credential": {
    positive: [{ text: `Authorization: Basic ${Buffer.from("user:pw123456").toString("base64")}`, secret: Buffer.from("user:pw123456").toString("base64") }],
    negative: ["basic authentication failed", "Basic realm"],
  },
  "secret-assignment": {
    positive: [
      { text: "login password=hunter2 ok", secret: "hunter2" },
      { text: `db_password_prod=${dbPassword}`, secret: dbPassword },
      { text: '{"user":"a","password":"p@ss w0rd","api_key": "k-1"}', secret: "p@ss w0rd" },
      { text: "DB_PASSWORD: s3cr3t", secret: "s3cr3t" },
      { text: "GET /cb?code=1&client_secret=abc123&x=1", secret: "abc123" },
      { text: "x-api-key=abcdef", secret: "abcdef" },
      { text: "pin_password=1234", secret: "1234" },
      { text: `GITHUB_TOKEN='${fake(12)}x'`, secret: "x'" },
    ],
    negative: ["max_tokens=100", "password=${DB_PASSWORD}", "password=***", "token refreshed for session 42", "password: <your password>", "key_id: 42", "primary key (id)"],
  },
};

const byId = (id: string) => SECRET_SHAPES.find((s) => s.id === id)!;

describe("secret shapes", () => {
  test("every rule has positive and negative examples, and every example names a rule", () => {
    for (const s of SECRET_SHAPES) {
      expect(EXAMPLES[s.id]?.positive.length ?? 0, s.id).toBeGreaterThan(0);
      expect(EXAMPLES[s.id]?.negative.length ?? 0, s.id).toBeGreaterThan(0);
    }
    for (const id of Object.keys(EXAMPLES)) expect(byId(id), id).toBeDefined();
    expect(new Set(SECRET_SHAPES.map((s) => s.id)).size).toBe(SECRET_SHAPES.length);
  });

  for (const shape of SECRET_SHAPES) {
    describe(shape.id, () => {
      test("finds and masks its positive examples", () => {
        for (const ex of EXAMPLES[shape.id]?.positive ?? []) {
          const found = findSecrets(ex.text, true).filter((f) => f.shape.id === shape.id);
          expect(found.length, `${shape.id} should find: ${ex.text}`).toBeGreaterThan(0);
          expect(found.every((f) => !f.what.includes(ex.secret ?? ex.text))).toBe(true);
          const masked = redactSecrets(ex.text);
          expect(masked, `${shape.id} should mask: ${ex.text}`).toContain(REDACTED);
          expect(masked).not.toContain(ex.secret ?? ex.text);
          // Blocking rules fail an image build; the others are only masked.
          expect(findSecrets(ex.text).some((f) => f.shape.id === shape.id)).toBe(shape.blocksImage);
        }
      });

      test("does not take its negative examples", () => {
        for (const text of EXAMPLES[shape.id]?.negative ?? []) {
          expect(findSecrets(text, true).filter((f) => f.shape.id === shape.id), `${shape.id} should not find: ${text}`).toEqual([]);
        }
      });
    });
  }

  test("what a hit says names the kind, never the value", () => {
    expect(findSecrets(opsToken).map((f) => f.what)).toEqual(["an ops API token (opst_)"]);
    expect(findSecrets(pkcs1).map((f) => f.what)).toEqual(["a private key (RSA PRIVATE KEY)"]);
  });

  test("text without any keyword comes back as the same string", () => {
    const line = "GET /api/v1/orders/42 200 in 12 ms cache hit";
    expect(redactSecrets(line)).toBe(line);
    expect(findSecrets(line, true)).toEqual([]);
  });
});
