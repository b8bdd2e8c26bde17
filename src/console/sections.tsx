/**
 * The sections of a project's pages in the console, in navigation order, and which page each
 * shows for the rest of its path. A capability that brings console pages adds one entry here and
 * its screens under `screens/`; the project frame (project-frame.tsx) draws the navigation and
 * calls `page`. This file is the only one that imports screens, so no screen imports another.
 *
 * A section owns every path under `/projects/<slug>/<id>/…`: `rest` is what follows its id
 * (e.g. `["42"]` for `/projects/shop/builds/42`), so a section can have list and detail pages.
 */
import type { JSX } from "preact";
import type { PermissionKey } from "../core/authz/catalog";
import type { SectionProps } from "./frame";
import { ProjectOverview } from "./screens/project-overview";
import { SourceList } from "./screens/sources";
import { Studio } from "./screens/studio";
import { BuildList } from "./screens/builds";
import { BuildPage } from "./screens/builds-page";
import { DeploymentsList } from "./screens/deployments";
import { ServicePage } from "./screens/service";
import { Overview as TranslationsOverview } from "./screens/translations";
import { BundleEditor } from "./screens/translations-editor";
import { SharedEditor } from "./screens/translations-shared";
import { LogsPage } from "./screens/obs/logs";
import { TracesPage } from "./screens/obs/traces";
import { MetricsPage } from "./screens/obs/metrics";
import { AlertsPage } from "./screens/alerts";
import { ModulesSection } from "./screens/modules";
import { ResourceList } from "./screens/resources";
import { ResourcePage } from "./screens/resource";
import { DatabasePage } from "./screens/database";
import { JobPage } from "./screens/job";
import { DomainPage } from "./screens/domain";
import { SecretsPage } from "./screens/secrets";
import { UnitSecretsPage } from "./screens/unit-secrets";
import { AccessPage } from "./screens/access";
import { RolesPage } from "./screens/roles";
import { AuditPage } from "./screens/audit";
import { SettingsPage } from "./screens/settings";
import { PackagesPage } from "./screens/packages";
import { PackagePage } from "./screens/package";
import { ImagePage } from "./screens/image";

/** A resource's page by type; types without their own use the generic one. */
const RESOURCE_PAGES: Record<string, (p: SectionProps) => JSX.Element> = {
  database: (p) => <DatabasePage {...p} />,
  job: (p) => <JobPage {...p} />,
  domain: (p) => <DomainPage {...p} />,
};

export interface Section {
  /** Path segment: `/projects/<slug>/<id>`; "" for the overview. */
  id: string;
  label: string;
  /** The permission the section's pages read with; the tab is offered only to people who hold it somewhere in the project. */
  needs?: PermissionKey;
  page(props: SectionProps): JSX.Element;
}

export const SECTIONS: Section[] = [
  { id: "", label: "Overview", needs: "resources.read", page: (p) => <ProjectOverview {...p} /> },
  {
    id: "resources",
    label: "Resources",
    needs: "resources.read",
    page: (p) => (p.rest[0] && p.rest[1] ? (RESOURCE_PAGES[p.rest[0]] ?? ((q: SectionProps) => <ResourcePage {...q} />))(p) : <ResourceList {...p} />),
  },
  { id: "secrets", label: "Secrets", needs: "secrets.read", page: (p) => (p.rest[0] === "services" ? <UnitSecretsPage {...p} /> : <SecretsPage {...p} />) },
  { id: "sources", label: "Sources", needs: "sources.read", page: (p) => (p.rest[0] ? <Studio project={p.project} sourceId={p.rest[0]} query={p.query} access={p.access} /> : <SourceList {...p} />) },
  { id: "builds", label: "Builds", needs: "builds.read", page: (p) => (p.rest[0] ? <BuildPage project={p.project} id={p.rest[0]} access={p.access} /> : <BuildList {...p} />) },
  {
    id: "deployments",
    label: "Deployments",
    needs: "deployments.read",
    page: (p) => (p.rest[0] ? <ServicePage project={p.project} service={p.rest[0]} query={p.query} access={p.access} /> : <DeploymentsList {...p} />),
  },
  {
    id: "translations",
    label: "Translations",
    needs: "translations.read",
    page: (p) => {
      const [page, id] = p.rest;
      if (page === "bundles" && id) return <BundleEditor project={p.project} bundleId={Number(id)} query={p.query} access={p.access} />;
      if (page === "shared" && id) return <SharedEditor project={p.project} bundleId={Number(id)} query={p.query} access={p.access} />;
      return <TranslationsOverview {...p} />;
    },
  },
  { id: "logs", label: "Logs", needs: "obs.read", page: (p) => <LogsPage {...p} /> },
  { id: "traces", label: "Traces", needs: "obs.read", page: (p) => <TracesPage {...p} /> },
  { id: "metrics", label: "Metrics", needs: "obs.read", page: (p) => <MetricsPage {...p} /> },
  { id: "alerts", label: "Alerts", needs: "obs.read", page: (p) => <AlertsPage {...p} /> },
  { id: "modules", label: "Modules", needs: "packages.read", page: (p) => <ModulesSection {...p} /> },
  {
    id: "packages",
    label: "Packages",
    needs: "packages.read",
    page: (p) => (p.rest[0] === "images" && p.rest[1] ? <ImagePage {...p} /> : p.rest[1] ? <PackagePage {...p} /> : <PackagesPage {...p} />),
  },
  { id: "access", label: "Access", needs: "project.read", page: (p) => (p.rest[0] === "roles" ? <RolesPage {...p} /> : <AccessPage {...p} />) },
  { id: "audit", label: "Audit", needs: "audit.read", page: (p) => <AuditPage {...p} /> },
  { id: "settings", label: "Settings", needs: "project.read", page: (p) => <SettingsPage {...p} /> },
];
