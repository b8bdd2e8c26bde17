/**
 * The backups domain's public surface: other domains and the server's start-up import only this
 * file. Before a binary migrates a data dir, start-up backs it up (pre-migration.ts).
 */
export { backupBeforeMigrating, pendingMigrations, PRE_MIGRATION_KEEP } from "./pre-migration";
