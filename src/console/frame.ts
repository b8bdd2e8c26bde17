/**
 * What the project frame hands every section's screen: the signed-in person, the project, the
 * path after the section's id and the query string. Screens import these types from here (and
 * shared pieces from ui.tsx and widgets/), never from another screen or from sections.tsx.
 */
import type { Me } from "./api";
import type { Access } from "./access";

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
  /** What the person may do in this project (see access.ts). */
  access: Access;
  /** Read the project again (after its settings changed). */
  reload(): void;
}
