/**
 * The builds domain module: pushes queue builds (the sources domain's `PUSH`), each build runs as
 * a state machine of scheduler items (pipeline.ts), and the routes read, queue, cancel and retry
 * them; the pusher is told what a push queued, or why nothing (push-feedback.ts). Under
 * `ops serve` it generates the estate's image-signing key (keys/signing.pem) when there is none,
 * and settles builds a stopped server left running before the scheduler starts. On close,
 * running process steps are stopped and their builds recorded as failed.
 * Decisions: docs/decisions/0414-builds.md, 0410-builder-images-signing.md, 0430-push-feedback.md and
 * 0435-one-build-per-commit.md (environments with the same build inputs share one image: reuse.ts).
 */
import type { DomainModule } from "../../core/core";
import { PUSH } from "../sources/service";
import { buildsRoutes } from "./routes";
import { ensureSigningKey } from "./signing";
import { defineBuildJobs, recoverBuilds, stopLiveBuilds } from "./pipeline";
import { sweepBuildDisks } from "./disk";
import { onPush } from "./queue";
import { tellPush } from "./push-feedback";

export const buildsModule: DomainModule = {
  name: "builds",
  install(core) {
    defineBuildJobs(core);
    core.events.on(PUSH, async (ev) => {
      let ids: number[];
      try {
        ids = await onPush(core, ev);
      } catch (e) {
        ev.say?.(`${ev.ref}: ops could not queue builds for this push (the server log says why)`);
        throw e;
      }
      await tellPush(core, ev, ids);
    });
    core.onClose.push(() => stopLiveBuilds(core, core.config.shutdownGraceMs));
  },
  async onServe(core) {
    ensureSigningKey(core);
    await sweepBuildDisks(core);
    await recoverBuilds(core);
  },
  routes: buildsRoutes,
};
