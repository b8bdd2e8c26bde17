/**
 * An image digest's signature state as the console shows it (decision 0302): what the builds that
 * pushed it report of their sign step, in each of the four cases.
 */
import { describe, test, expect } from "bun:test";
import { signatureOf } from "./packages";
import type { Build, StepTiming } from "./builds";

const at = "2026-11-27T10:00:00.000Z";

function build(id: number, steps: StepTiming[], extra: Partial<Build> = {}): Build {
  return { id, kind: "image", status: "healthy", service: "web", environment: "production", project: "shop", repo: "shop/web", commit_sha: "a".repeat(40), message: "m", author: "a", trigger: "push", requested_by: "host", queued_at: at, step_timings: steps, ...extra };
}

const push: StepTiming = { step: "push", started_at: at, finished_at: at, ok: true };

describe("a digest's signature state", () => {
  test("signed when a build that pushed it finished its sign step", () => {
    const s = signatureOf([build(8, [push, { step: "sign", started_at: at, finished_at: at, ok: false }], { status: "failed", failure_kind: "sign" }), build(7, [push, { step: "sign", started_at: at, finished_at: at, ok: true }])]);
    expect(s.state).toBe("signed");
    expect(s.text).toStartWith("signed with the estate key by build 7");
  });

  test("failed when its builds' sign step failed", () => {
    const s = signatureOf([build(9, [push, { step: "sign", started_at: at, finished_at: at, ok: false }], { status: "failed", failure_kind: "sign", error: "the image could not be signed: no key" })]);
    expect(s).toEqual({ state: "failed", text: "signing failed in build 9: the image could not be signed: no key" });
  });

  test("unsigned when its builds stopped before signing", () => {
    expect(signatureOf([build(4, [push], { status: "cancelled" })])).toEqual({ state: "unsigned", text: "not signed: build 4 stopped before its sign step" });
  });

  test("unknown for a digest no build pushed", () => {
    expect(signatureOf([]).state).toBe("unknown");
  });
});
