/**
 * The resources domain's public surface: other domains import only this file.
 */
export { getResource, listResources, listResourcesOfType, createResource, putResource, putResourceAs, deleteResource, observeResource, observeRow, rewriteSpecIn, type ResourceAddress } from "./store";
export { findResource, getResourceRow, listOfType, listOfTypeInProject, listOfTypeEverywhere, placeFor, resourceById, specOf, toResponse, writeStatus, auditTarget, UNOBSERVED_SUMMARY, type ResourceRow, type Place, type Observed } from "./rows";
export { extendKind, provideSecretValues, secretValues, type KindHooks, type SecretValues, type WriteContext } from "./kinds";
export { usersOfGroup, assertGroupExists } from "./kind-rules";
export { refusedHost } from "./domain-hosts";
export { requestRun, listRuns, runLog, enqueueDueRuns, executeRun, recoverInterruptedRuns, stopLiveRuns, JOB_RUN_ITEM, JOB_SCHEDULE_TASK } from "./job-runs";
export { rotateDatabasePassword, restoreRunbook, planeOf, planeName, PITR_TEXT } from "./databases";
export { bucketDir, countBucket } from "./buckets";
export { catalog } from "./catalog";
export { markRestartRequired } from "./restart";
export { TYPE_INFO, RESOURCE_TYPES, ENV_VAR_PATTERN, HOST_PATTERN, BASE_IMAGE_PATTERN, PLACEMENT_PATTERN, isResourceType, assertType, checkSpec, type ResourceType, type ServiceSpec, type JobSpec, type SecretGroupSpec } from "./specs";
