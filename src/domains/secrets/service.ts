/**
 * The secrets domain's public surface: other domains import only this file.
 */
export { listVariables, setVariable, deleteVariable, rotateGroup, listVersions, groupEnv, storeVariable, assertEnvVarName } from "./groups";
export { listSecrets, exportEnv, setSecret, deleteSecret, unitSecret, unitEnvironments } from "./unit-secrets";
export { storeStatus, sealStore, unsealStore } from "./admin";
export { rewriteValues } from "./bridge";
export { renderDotenv, quoteDotenvValue } from "./dotenv";
