/**
 * What a publish plan is: the modules a tag ships, their halves and the order. plan.ts makes one;
 * store.ts records it; pack.ts and publish.ts carry it out. Apart from plan.ts so the ledger
 * (store.ts), which the plan asks what a commit already published, imports no plan code.
 */
import type { NotesSection } from "./changelog";

export interface PlannedHalf {
  /** Published name. */
  name: string;
  /** The manifest as ops rewrote it (Cargo.toml or package.json text). */
  manifest: string;
  /** Sibling modules this half depends on. */
  requires: string[];
  /** Already published by this tag's commit (a retry): skipped. */
  skip: boolean;
}

export interface PlannedModule {
  name: string;
  /** Repository-relative directory (`modules/<name>`). */
  dir: string;
  description: string;
  crate: PlannedHalf | null;
  layer: PlannedHalf | null;
  /** Union of the halves' requirements, sorted. */
  requires: string[];
  /** `locales/<locale>.json` files: the canonical tag and the repository-relative path; `en` first when shipped. */
  locales: Array<{ locale: string; file: string }>;
  /** CHANGELOG.md sections up to the tag's version. */
  notes: NotesSection[];
}

export interface ModulePlan {
  tag: string;
  version: string;
  commit: string;
  /** In publish order. */
  modules: PlannedModule[];
  /** What the plan decided that a maintainer should see (rewrites, halves left out, skips). */
  log: string[];
}
