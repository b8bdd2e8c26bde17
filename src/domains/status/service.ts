/**
 * The status domain's public surface. Other domains report their component's state with
 * `setComponentState(core, "builds", "degraded", reason, "builds")`.
 */
export { setComponentState, addComponent, removeComponent, recordTransition, listComponents, ensurePlatformComponents, toComponentResponse, toTransitionResponse, worst, PLATFORM_COMPONENTS } from "./components";
export { publicStatus, cachedPublicStatus, foldIncidents, INCIDENT_WINDOW_MS, PUBLIC_CACHE_MS } from "./public";
export { probePlatform, checkSchedulerHeartbeat, PROBE_TASK } from "./jobs";
