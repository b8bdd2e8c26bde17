/**
 * Domain events the registries raise, inside the transaction of the change that causes them.
 * `package.published` (document 1's notification kind) goes to the members of the publishing
 * project; its params name the package and never hold personal data.
 */
import type { Core, ProjectRef } from "../../../core/core";
import type { Tx } from "../../../core/db/client";

export interface PackagePublishedEvent {
  project: ProjectRef;
  registry: string;
  name: string;
  version: string;
}

/** Raise `package.published` (no-op until the notifications service is installed). */
export function packagePublished(_core: Core, _t: Tx, _e: PackagePublishedEvent): void {
  // Delivery belongs to the notifications domain; see docs/decisions.md (Registries).
}
