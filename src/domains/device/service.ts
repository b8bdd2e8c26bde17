/**
 * The device domain's public surface (RFC 8628 device grant for the CLI and MCP clients).
 */
export { startDeviceGrant, pollDeviceGrant, deviceError, cleanClientName, defaultTokenName, DEVICE_CODE_TTL_S, POLL_INTERVAL_S, SLOW_DOWN_STEP_S, DEVICE_GRANT_TYPE, START_LIMIT, type PollOutcome } from "./grants";
export { getDeviceGrant, approveDeviceGrant, denyDeviceGrant, LOOKUP_LIMIT } from "./decide";
export { expireDeviceGrants } from "./jobs";
export { newUserCode, normaliseUserCode, displayUserCode, USER_CODE_ALPHABET } from "./codes";
