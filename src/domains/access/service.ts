/**
 * The access domain's public surface: other domains call these (never the files behind them).
 */
export { createProject, findProjectRow, assertNotArchived, SLUG_PATTERN, DEFAULT_ENVIRONMENTS, projectView, listProjects, allProjects } from "./projects";
export { createOperator, insertOperator, findOperator, findOperatorByEmail, hashPassword, type CreateOperatorInput } from "./operators";
export { addOperator, updateOperator } from "./operator-admin";
export { ensureFixedRoles, fixedRole, findRole } from "./roles";
export { upsertMembership, projectPeople, estatePeople } from "./memberships";
export { insertSession, sessionEndsAt } from "./sessions";
export { signIn } from "./signin";
export { mintTokenIn, insertToken, assertMintable, isMintable, overCarry, resolveMintTarget, expiryFor, type MintRequest, type TokenKind } from "./tokens";
export { flushTouches } from "./authn";
export { bootstrapOwner } from "./bootstrap";
export { operatorName, type OperatorRow, type ProjectRow, type RoleRow, type TokenRow, type SessionRow } from "./rows";
export { rolesForProjects } from "./role-lists";
export { me } from "./identity";
export { listAudit } from "./audit-read";
