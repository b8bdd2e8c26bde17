/**
 * The built-in git host's own rows. Repositories themselves are bare directories under `git/`;
 * what a host keeps beside them lives here: the installation number of each owner (a project), pull
 * requests, and the check runs, commit statuses, deployments and deployment statuses that builds
 * report (GitHub keeps those; the built-in host records them so both answer the same ids).
 * Repositories are named by `owner/name` text, not by a foreign key: the host does not know ops's
 * projects table. Timestamps are integer epoch ms.
 */
import { sqliteTable, text, integer, index, uniqueIndex } from "drizzle-orm/sqlite-core";

/** One installation per owner, the number sources record as `installation_id`. */
export const gitOwners = sqliteTable("git_owners", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  owner: text("owner").notNull().unique(),
  createdAt: integer("created_at").notNull(),
});

export const gitPulls = sqliteTable(
  "git_pulls",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** `owner/name`. */
    repo: text("repo").notNull(),
    /** Counts from 1 per repository. */
    number: integer("number").notNull(),
    head: text("head").notNull(),
    base: text("base").notNull(),
    title: text("title").notNull(),
    body: text("body").notNull().default(""),
    state: text("state", { enum: ["open", "closed", "merged"] }).notNull(),
    /** The head's commit when opened (a later push to the head branch moves it). */
    headSha: text("head_sha").notNull(),
    mergeSha: text("merge_sha"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("git_pulls_number").on(t.repo, t.number)],
);

/** Check runs, commit statuses, deployments and deployment statuses reported on commits. */
export const gitRecords = sqliteTable(
  "git_records",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    repo: text("repo").notNull(),
    kind: text("kind", { enum: ["check_run", "status", "deployment", "deployment_status"] }).notNull(),
    /** The commit reported on. */
    sha: text("sha").notNull(),
    /** A deployment status's deployment. */
    parentId: integer("parent_id"),
    /** Check name, status context, or deployment environment. */
    name: text("name").notNull(),
    /** queued/in_progress/completed, pending/success/failure/error, or a deployment state. */
    state: text("state").notNull(),
    conclusion: text("conclusion"),
    /** JSON: title, summary, description, URLs. */
    detail: text("detail").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("git_records_commit").on(t.repo, t.sha)],
);
