/**
 * Image signing, cosign style (reference/cosign-signing.md). The estate's ECDSA P-256 key lives in
 * `keys/signing.pem` (PKCS#8, mode 0600), generated when `ops serve` starts and, failing that, by
 * the first signature. A pushed digest D of repository R is signed by pushing into R, under the
 * tag `sha256-<hex of D>.sig`, an OCI manifest whose layers are simple-signing payloads, each with
 * its base64 DER ECDSA-SHA256 signature in the annotation `dev.cosignproject.cosign/signature` —
 * what cosign writes and what `cosign verify --key` and containers/image read.
 *
 * `verifyImageSignature` is the deploy gate's check: it reads the signature manifest and payloads
 * back from the registry and verifies them against the estate key; it trusts no flag or row.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import path from "node:path";
import type { Core } from "../../core/core";
import { SYSTEM_ACTOR } from "../../core/audit";
import { OpsError } from "../../core/errors";
import { pushImage, registryService, storedBlob, storedManifest, type ManifestPusher } from "../registries/service";
import { OCI_CONFIG, OCI_MANIFEST } from "./image";
import { withKeyLock } from "../../core/locks";

export const SIGNING_KEY_FILE = "signing.pem";
export const SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json";
export const SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature";
export const SIGNATURE_TYPE = "cosign container image signature";
/** Payloads are a few hundred bytes; a larger layer is not one of ours. */
const MAX_PAYLOAD_BYTES = 64 * 1024;

const LOCAL = "builds.signing-key";

interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicKeyPem: string;
  /** SHA-256 of the public key's DER, hex. */
  fingerprint: string;
}

export function signingKeyPath(core: Core): string {
  return path.join(core.config.dataDir, "keys", SIGNING_KEY_FILE);
}

/** Generate the estate's signing key when there is none (mode 0600; a concurrent process's key wins). */
export function ensureSigningKey(core: Core): void {
  const file = signingKeyPath(core);
  if (existsSync(file)) return;
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  try {
    writeFileSync(file, privateKey.export({ type: "pkcs8", format: "pem" }) as string, { mode: 0o600, flag: "wx" });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  chmodSync(file, 0o600);
  core.log.info("image signing key generated", { file: path.join("keys", SIGNING_KEY_FILE) });
}

/** The signing key, or null when none was generated yet. Loaded once per Core. */
function loadKey(core: Core): SigningKey | null {
  const cached = core.locals.get(LOCAL) as SigningKey | undefined;
  if (cached) return cached;
  const file = signingKeyPath(core);
  if (!existsSync(file)) return null;
  const privateKey = createPrivateKey(readFileSync(file, "utf8"));
  if (privateKey.asymmetricKeyType !== "ec" || privateKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new OpsError("internal", `keys/${SIGNING_KEY_FILE} is not an ECDSA P-256 key.`);
  }
  const publicKey = createPublicKey(privateKey);
  const der = publicKey.export({ type: "spki", format: "der" });
  const key: SigningKey = {
    privateKey,
    publicKey,
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }) as string,
    fingerprint: createHash("sha256").update(der).digest("hex"),
  };
  core.locals.set(LOCAL, key);
  return key;
}

/** The estate's public key as PEM (SubjectPublicKeyInfo) with its fingerprint; null when signing is not configured. */
export function signingPublicKey(core: Core): { pem: string; fingerprint: string } | null {
  const key = loadKey(core);
  return key ? { pem: key.publicKeyPem, fingerprint: key.fingerprint } : null;
}

/** The tag cosign looks for: `sha256-<hex>.sig`. */
export function signatureTag(digest: string): string {
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (!m) throw new OpsError("validation_failed", `"${digest}" is not a sha256 digest.`);
  return `sha256-${m[1]}.sig`;
}

/** The simple-signing payload for `digest` of `repository`, as the exact bytes that are signed. */
export function signaturePayload(core: Core, repository: string, digest: string): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      critical: { identity: { "docker-reference": `${registryService(core)}/${repository}` }, image: { "docker-manifest-digest": digest }, type: SIGNATURE_TYPE },
      optional: null,
    }),
  );
}

interface SigLayer {
  mediaType?: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

async function signatureLayers(core: Core, repository: string, digest: string): Promise<SigLayer[]> {
  const sig = await storedManifest(core, repository, signatureTag(digest));
  if (!sig || sig.mediaType !== OCI_MANIFEST) return [];
  try {
    const doc = JSON.parse(new TextDecoder().decode(sig.bytes)) as { layers?: SigLayer[] };
    return Array.isArray(doc.layers) ? doc.layers : [];
  } catch {
    return [];
  }
}

/** Why `layer` is not a valid signature of `digest` of `repository` by `key`, or null when it is. */
async function checkLayer(core: Core, key: SigningKey, repository: string, digest: string, layer: SigLayer): Promise<string | null> {
  const signature = layer.annotations?.[SIGNATURE_ANNOTATION];
  if (layer.mediaType !== SIMPLE_SIGNING || typeof signature !== "string") return "not a simple-signing layer";
  if (typeof layer.size !== "number" || layer.size > MAX_PAYLOAD_BYTES) return "payload too large";
  const blob = storedBlob(core, repository, layer.digest);
  if (!blob) return "payload missing";
  const bytes = new Uint8Array(await blob.arrayBuffer());
  if (`sha256:${createHash("sha256").update(bytes).digest("hex")}` !== layer.digest) return "payload does not match its digest";
  if (!verify("sha256", bytes, key.publicKey, Buffer.from(signature, "base64"))) return "signature not made by the estate key";
  let doc: { critical?: { type?: unknown; image?: Record<string, unknown>; identity?: Record<string, unknown> } };
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return "payload is not JSON";
  }
  const c = doc?.critical;
  if (!c || c.type !== SIGNATURE_TYPE) return "payload type is not a cosign container image signature";
  if (c.image?.["docker-manifest-digest"] !== digest) return "payload signs another digest";
  const ref = c.identity?.["docker-reference"];
  if (typeof ref !== "string" || !(ref === repository || ref.endsWith(`/${repository}`))) return "payload names another repository";
  return null;
}

export type SignatureCheck = { ok: true; fingerprint: string } | { ok: false; reason: string };

/**
 * Whether `digest` of `repository` carries a valid signature by the estate key (see the file
 * comment). Never throws for a missing or bad signature: the reason says what is wrong.
 */
export async function verifyImageSignature(core: Core, repository: string, digest: string): Promise<SignatureCheck> {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return { ok: false, reason: `"${digest}" is not a sha256 digest` };
  const key = loadKey(core);
  if (!key) return { ok: false, reason: "image signing is not configured (no estate signing key)" };
  if (!(await storedManifest(core, repository, digest))) return { ok: false, reason: `${repository}@${digest} is not in the registry` };
  const layers = await signatureLayers(core, repository, digest);
  if (layers.length === 0) return { ok: false, reason: `${repository}@${digest} is not signed` };
  const reasons: string[] = [];
  for (const layer of layers) {
    const why = await checkLayer(core, key, repository, digest, layer);
    if (why === null) return { ok: true, fingerprint: key.fingerprint };
    reasons.push(why);
  }
  return { ok: false, reason: `no valid signature by the estate key for ${repository}@${digest} (${[...new Set(reasons)].join("; ")})` };
}

export interface SignedImage {
  tag: string;
  /** Digest of the signature manifest. */
  signatureDigest: string;
  fingerprint: string;
  /** False when a valid signature by the estate key was already there. */
  added: boolean;
}

/**
 * Sign `digest` of `repository` (which must be pushed): a new layer in its `.sig` manifest, or
 * nothing when the estate key already signed it. The push is audited as `packages.publish` by
 * `pusher` (default: the system), with the key's fingerprint.
 */
export async function signImage(core: Core, repository: string, digest: string, pusher?: ManifestPusher): Promise<SignedImage> {
  const tag = signatureTag(digest);
  return withKeyLock(core, "builds.signing", `${repository}@${digest}`, async () => {
    if (!(await storedManifest(core, repository, digest))) throw new OpsError("not_found", `${repository}@${digest} is not in the registry.`);
    ensureSigningKey(core);
    const key = loadKey(core)!;
    const layers = await signatureLayers(core, repository, digest);
    for (const layer of layers) {
      if ((await checkLayer(core, key, repository, digest, layer)) === null) {
        const existing = await storedManifest(core, repository, tag);
        return { tag, signatureDigest: existing!.digest, fingerprint: key.fingerprint, added: false };
      }
    }
    const payload = signaturePayload(core, repository, digest);
    const payloadDigest = `sha256:${createHash("sha256").update(payload).digest("hex")}`;
    const signature = sign("sha256", payload, key.privateKey).toString("base64");
    const all: SigLayer[] = [
      ...layers.filter((l) => l.mediaType === SIMPLE_SIGNING && typeof l.digest === "string"),
      { mediaType: SIMPLE_SIGNING, size: payload.byteLength, digest: payloadDigest, annotations: { [SIGNATURE_ANNOTATION]: signature } },
    ];
    // cosign's image config for signatures: empty but for the payloads as diff ids.
    const config = new TextEncoder().encode(
      JSON.stringify({
        architecture: "",
        created: "0001-01-01T00:00:00Z",
        history: [{ created: "0001-01-01T00:00:00Z" }],
        os: "",
        rootfs: { type: "layers", diff_ids: all.map((l) => l.digest) },
        config: {},
      }),
    );
    const configDigest = `sha256:${createHash("sha256").update(config).digest("hex")}`;
    const manifest = new TextEncoder().encode(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: OCI_CONFIG, size: config.byteLength, digest: configDigest },
        layers: all.map((l) => ({ mediaType: l.mediaType, size: l.size, digest: l.digest, annotations: l.annotations })),
      }),
    );
    const pushed = await pushImage(core, {
      repository,
      blobs: [
        { digest: payloadDigest, size: payload.byteLength, source: { bytes: payload } },
        { digest: configDigest, size: config.byteLength, source: { bytes: config } },
      ],
      manifest,
      mediaType: OCI_MANIFEST,
      tag,
      pusher: {
        ...(pusher ?? { subject: "ops", audit: SYSTEM_ACTOR }),
        context: { ...pusher?.context, signed: digest, key: key.fingerprint.slice(0, 16) },
      },
    });
    return { tag, signatureDigest: pushed.digest, fingerprint: key.fingerprint, added: true };
  });
}
