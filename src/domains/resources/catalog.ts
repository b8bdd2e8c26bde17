/** GET /api/v1/catalog: every resource type with the JSON Schema of its spec. */
import { TYPE_INFO, RESOURCE_TYPES } from "./specs";
import type { CatalogEntry } from "./model";

export function catalog(): CatalogEntry[] {
  return RESOURCE_TYPES.map((type) => {
    const info = TYPE_INFO[type];
    return {
      type,
      scope: info.projectLevel ? "project" : "environment",
      description: info.description,
      delete_confirm: info.deleteConfirm,
      schema: JSON.parse(JSON.stringify(info.schema)),
    };
  });
}
