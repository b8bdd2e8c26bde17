/** A connected repository as GET …/sources answers it (SourceResponse). */
export interface SourceInfo {
  id: string;
  repo: string;
  clone_url: string;
  default_branch: string;
  connected_at: string;
  installation_id: number;
  last_event_at?: string | null;
  services: string[];
  declared?: { services: string[]; steps: string[]; domains: Record<string, string[]>; hooks: Record<string, string[]> } | null;
}
