/**
 * Whether the runtime can run an image at all (decision 0621). A native build without a base
 * (`dev.ops.runtime=process`) packs only the app: it runs on the host's toolchains, which the
 * process runtime binds into its sandbox. An engine's node (`OPS_RUNTIME=docker` or `swarm`) has
 * no toolchain and no /bin/sh to start it with, so such an image is refused before its rollout
 * is recorded, saying how to make one that carries what it runs; every other image (built on a
 * base, by buildah, or pushed) is the engine's to run.
 */
import type { Core } from "../../core/core";
import { OpsError } from "../../core/errors";
import { readImage } from "../registries/service";
import { recordRefusal, type RolloutRequest } from "./record";
import { repositoryOf, shortDigest } from "./rows";

const LABEL_RUNTIME = "dev.ops.runtime";

/** Whether replicas run where ops runs, with its toolchains (the process runtime), rather than on an engine's nodes. */
function runsOnThisHost(core: Core): boolean {
  return core.config.runtime === "process";
}

/** Refuse (recorded as `refused`, 422) an image that needs the host's toolchains on an engine runtime. */
export async function assertRunnableHere(core: Core, req: RolloutRequest): Promise<void> {
  if (runsOnThisHost(core)) return;
  let runtime: string | undefined;
  try {
    runtime = (await readImage(core, repositoryOf(req.addr), req.digest)).config.labels[LABEL_RUNTIME];
  } catch {
    // An image that cannot be read is the rollout's to report, as before.
    return;
  }
  if (runtime !== "process") return;
  const reason =
    `it is a native image without a base (${LABEL_RUNTIME}=process): it holds only the app and runs on the host's toolchains, ` +
    `and OPS_RUNTIME=${core.config.runtime} runs it on an engine whose node has no toolchains (no /bin/sh, no runtime for the app). ` +
    `Give the service a base image in ops.toml (base = "<project>/<image>:<tag>" under [services.${req.addr.service}], an image in ops's registry with what the app needs) or a Dockerfile, and build again; ` +
    `the process runtime (OPS_RUNTIME=process) still runs this image`;
  const row = recordRefusal(core, req, reason);
  throw new OpsError("refused", `Refused to deploy ${shortDigest(req.digest)}: ${reason}.`, { digest: req.digest, deployment: row.id });
}
