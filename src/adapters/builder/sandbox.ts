/**
 * The builders' view of the shared sandbox (src/adapters/sandbox/): the build user, the host user
 * a root ops drops to, and the helpers that prepare directories for them. Kept so callers of the
 * builder (the builds domain packs images owned by the build user) have one stable import.
 */
export { SANDBOX_UID, SANDBOX_GID, HOST_UNPRIVILEGED_ID, SANDBOX_HOME, findSandboxTools, runsAsRoot, defaultIdentity, handOver, sandboxDir, writePasswd, dropPrivilegesArgv, type SandboxTools, type SandboxIdentity } from "../sandbox/users";
export { sandboxArgv, type Mount, type SandboxOptions } from "../sandbox/bwrap";
