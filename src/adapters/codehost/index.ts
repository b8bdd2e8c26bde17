/**
 * The code host of a Core, chosen once from `core.config.codeHost` (`OPS_CODE_HOST`) and kept in
 * `core.locals`: the built-in git host (default) or the GitHub App. Domains call `codeHostFor`
 * and never learn which one they got.
 *
 * Implementations: `builtin/` exports `createBuiltinHost(core)`; `github/` is to export
 * `createGithubHost(core)` (an unconfigured App answers `configured() === false`).
 */
import type { Core } from "../../core/core";
import { createGithubHost } from "./github";
import type { CodeHost } from "./types";
import { unconfiguredHost } from "./unconfigured";
import { createBuiltinHost } from "./builtin";

export type { CodeHost } from "./types";

const KEY = "codehost.instance";

function create(core: Core): CodeHost {
  switch (core.config.codeHost) {
    case "builtin":
      return createBuiltinHost(core);
    case "github":
      return createGithubHost(core);
  }
}

/** The Core's code host (created on first use). */
export function codeHostFor(core: Core): CodeHost {
  let host = core.locals.get(KEY) as CodeHost | undefined;
  if (!host) {
    host = create(core);
    core.locals.set(KEY, host);
  }
  return host;
}
