/**
 * The translation API's shapes as the console reads them (document 3, Translations), and the
 * paths it calls. The console only talks to the public API.
 */
import { ApiError } from "../api";

/** The server's message for a failed call. */
export function message(e: unknown): string {
  return e instanceof ApiError ? e.message : "That did not work.";
}

/** `act(call, done)`: run a change, then say `done` and reload — or show why it failed. */
export function actions(setError: (e: string | null) => void, setOk: (m: string | null) => void, reload: () => Promise<unknown>) {
  return async (what: () => Promise<unknown>, done: string): Promise<void> => {
    setError(null);
    setOk(null);
    try {
      await what();
      setOk(done);
      await reload();
    } catch (e) {
      setError(message(e));
    }
  };
}
export interface OwnBundle {
  id: number;
  name: string;
  languages: number;
  namespaces: number;
  strings: number;
  locales?: string[];
  kind?: "own" | "estate" | "package";
  source_locale?: string;
  package?: string | null;
  latest_version?: string | null;
}

export interface SharedBundle {
  id: number;
  name: string;
  keys: number;
  overrides: number;
  owner: string;
  project: string;
  removed: number;
  version?: string | null;
  kind?: "own" | "estate" | "package";
  source_locale?: string;
}

export interface ProjectTranslations {
  own: OwnBundle[];
  shared: SharedBundle[];
}

export interface BundleSummary {
  id: number;
  name: string;
  languages: number;
  strings: number;
  owner: string;
  project: string;
  package?: string | null;
  latest_version?: string | null;
  kind?: "own" | "estate" | "package";
}

export interface Entry {
  key: string;
  namespace: string;
  updated_at: string;
  values: Record<string, string>;
  version: number;
  review?: string[];
}

export interface SharedRow {
  key: string;
  namespace: string;
  override_value?: string | null;
  removed: boolean;
  values: Record<string, string>;
}

export interface SharedView {
  id: number;
  locale: string;
  name: string;
  owner: string;
  project: string;
  rows: SharedRow[];
  version?: string | null;
  source_locale?: string;
}

/** `/api/v1/projects/<slug>/translations<rest>` */
export const trPath = (slug: string, rest = "") => `/api/v1/projects/${encodeURIComponent(slug)}/translations${rest}`;

/** `/projects/<slug>/translations<rest>` in the console. */
export const trPage = (slug: string, rest = "") => `/projects/${encodeURIComponent(slug)}/translations${rest}`;

export const KIND_LABEL = { own: "own", estate: "estate-shared", package: "package" } as const;
