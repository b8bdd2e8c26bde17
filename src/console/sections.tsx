/**
 * The sections of a project's pages in the console, in navigation order. A capability that
 * brings console pages adds one entry here and its screen under `screens/`; the project frame
 * (screens/project.tsx) draws the navigation and hands the section its props.
 *
 * A section owns every path under `/projects/<slug>/<id>/…`: `rest` is what follows its id
 * (e.g. `["42"]` for `/projects/shop/builds/42`), so a section can have list and detail pages.
 */
import type { ComponentType } from "preact";
import type { Me } from "./api";
import { ProjectOverview } from "./screens/project-overview";
import { SourcesSection } from "./screens/sources";
import { BuildsSection } from "./screens/builds";
import { DeploymentsSection } from "./screens/deployments";
import { Translations } from "./screens/translations";
import { LogsPage } from "./screens/obs/logs";
import { TracesPage } from "./screens/obs/traces";
import { MetricsPage } from "./screens/obs/metrics";
import { ModulesSection } from "./screens/modules";

export interface ProjectInfo {
  id: string;
  slug: string;
  name: string;
  environments: string[];
  archived: boolean;
}

export interface SectionProps {
  me: Me;
  project: ProjectInfo;
  /** Path segments after the section id, decoded. */
  rest: string[];
  query: URLSearchParams;
}

export interface Section {
  /** Path segment: `/projects/<slug>/<id>`; "" for the overview. */
  id: string;
  label: string;
  component: ComponentType<SectionProps>;
}

export const SECTIONS: Section[] = [
  { id: "", label: "Overview", component: ProjectOverview },
  { id: "sources", label: "Sources", component: SourcesSection },
  { id: "builds", label: "Builds", component: BuildsSection },
  { id: "deployments", label: "Deployments", component: DeploymentsSection },
  { id: "translations", label: "Translations", component: Translations },
  { id: "logs", label: "Logs", component: LogsPage },
  { id: "traces", label: "Traces", component: TracesPage },
  { id: "metrics", label: "Metrics", component: MetricsPage },
  { id: "modules", label: "Modules", component: ModulesSection },
];
