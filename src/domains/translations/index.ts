/**
 * The translations domain: own, estate-shared and package bundles, overrides, attachments, and
 * the composed export (document 3, Translations).
 * Decisions: docs/decisions/0413-translations.md.
 */
import type { DomainModule } from "../../core/core";
import { translationRoutes } from "./routes";

export const translationsModule: DomainModule = {
  name: "translations",
  routes: translationRoutes,
};
