/**
 * A host that cannot be used: `configured()` is false and every call answers 503 `unavailable`
 * with the reason, so `/host` and `/sources` tell the operator what is missing instead of failing
 * later. Used when the chosen host lacks its settings (or is not part of this build).
 */
import type { Logger } from "../../core/log";
import { OpsError } from "../../core/errors";
import { PushSubscribers } from "./push";
import type { CodeHost, CodeHostKind } from "./types";

/** A `CodeHost` of `kind` that refuses everything with `reason`. */
export function unconfiguredHost(kind: CodeHostKind, reason: string, log: Logger): CodeHost {
  const refuse = (): never => {
    throw new OpsError("unavailable", reason);
  };
  const pushes = new PushSubscribers(log);
  return {
    kind,
    configured: () => false,
    describe: async () => refuse(),
    listRepos: async () => refuse(),
    installationFor: async () => refuse(),
    getRepo: async () => refuse(),
    ensureRepo: async () => refuse(),
    resolveRef: async () => refuse(),
    readTree: async () => refuse(),
    readFile: async () => refuse(),
    commitInfo: async () => refuse(),
    fetchCommit: async () => refuse(),
    commitChanges: async () => refuse(),
    openPull: async () => refuse(),
    getPull: async () => refuse(),
    mergePull: async () => refuse(),
    closePull: async () => refuse(),
    createCheckRun: async () => refuse(),
    updateCheckRun: async () => refuse(),
    setCommitStatus: async () => refuse(),
    createDeployment: async () => refuse(),
    createDeploymentStatus: async () => refuse(),
    repoUrl: () => refuse(),
    cloneUrl: () => refuse(),
    fileUrl: () => refuse(),
    pullUrl: () => refuse(),
    onPush: (h) => pushes.on(h),
  };
}
