/**
 * The settings of the images builds write (config.ts's part for them, kept apart so that file
 * stays one idea under the 400-line rule; its fields are part of `Config`): which project's
 * images every project may build on (`base` in ops.toml, docs/decisions/0620).
 */
import { ConfigError, str, type Env } from "./config-values";

export interface ImagesConfig {
  /** The project whose images every project may name as a base image; null = each project builds only on its own. */
  readonly baseImagesProject: string | null;
}

/** The variables `imagesConfig` reads, in the order of CONFIG_VARIABLES. */
export const IMAGE_VARIABLES: ReadonlyArray<{ name: string; default: string; description: string }> = [
  { name: "OPS_BASE_IMAGES_PROJECT", default: "(unset)", description: "A project whose images every project may name as a base image (`base` in ops.toml); unset = each project builds only on its own images" },
];

/** Parse the image settings out of `e`. */
export function imagesConfig(e: Env): ImagesConfig {
  const slug = str(e, "OPS_BASE_IMAGES_PROJECT");
  if (slug !== null && !/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw new ConfigError("OPS_BASE_IMAGES_PROJECT", `expected a project slug, got "${slug}"`);
  return { baseImagesProject: slug };
}
