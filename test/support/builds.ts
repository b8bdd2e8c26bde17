/**
 * Test helpers of the builds domain: real skopeo against the test app's embedded registry, with a
 * throwaway home so no auth file or policy of the machine's user is used; a packed image pushed
 * in-process, as a build pushes it.
 */
import path from "node:path";
import { tempDir } from "../harness";
import { run, type RunResult } from "./registries";
import type { Core } from "../../src/core/core";
import { SYSTEM_ACTOR } from "../../src/core/audit";
import { pushImage, type PushedImage } from "../../src/domains/registries/service";
import { packedBlobs, type PackedImage } from "../../src/domains/builds/image";

/** `skopeo --insecure-policy <args>` (loopback registries only; callers pass --tls-verify=false). */
export function skopeo(args: string[]): Promise<RunResult> {
  const home = tempDir("ops-skopeo-home-");
  return run(["skopeo", "--insecure-policy", ...args], { cwd: home, env: { HOME: home, XDG_RUNTIME_DIR: home, REGISTRY_AUTH_FILE: path.join(home, "auth.json") }, timeoutMs: 120_000 });
}

/** Push a packed image into `core`'s registry in-process as `repository:tag`, by ops itself (as a build's push step does). */
export function pushPacked(core: Core, image: PackedImage, repository: string, tag: string | null): Promise<PushedImage> {
  return pushImage(core, { repository, blobs: packedBlobs(image), manifest: image.manifest.bytes, mediaType: image.manifest.mediaType, tag, pusher: { subject: "ops", audit: SYSTEM_ACTOR } });
}
