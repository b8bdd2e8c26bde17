/**
 * People and roles as the Access pages show them: the shapes of members, roles, permissions and
 * environment policies, the pages' tabs, and the permission picker grouped as the catalog groups
 * them, each permission with its description.
 */
import { Link } from "../ui";

export interface Member {
  operator_id: string;
  email: string;
  display_name: string;
  kind: "person" | "machine";
  project?: string | null;
  role_id: string;
  role_name: string;
  role_slug: string;
  since: string;
}

export interface Role {
  id: string;
  slug: string;
  display_name: string;
  description: string;
  fixed: boolean;
  members: number;
  permissions: string[];
  project?: string | null;
}

export interface Permission {
  key: string;
  group: string;
  label: string;
  hint: string;
}

export interface Policy {
  environment: string;
  role_id: string;
  role_name: string;
  allowed: string[];
  removed: string[];
  updated_at: string;
}

export function AccessTabs(props: { slug: string; current: "members" | "roles" }) {
  return (
    <nav class="tabs sub" aria-label="Access">
      <Link href={`/projects/${props.slug}/access`} current={props.current === "members"}>
        Members and tokens
      </Link>
      <Link href={`/projects/${props.slug}/access/roles`} current={props.current === "roles"}>
        Roles and environment policies
      </Link>
    </nav>
  );
}

/** Checkboxes of `permissions` grouped by catalog group, with each one's description. */
export function PermissionPicker(props: { idPrefix: string; permissions: Permission[]; chosen: ReadonlySet<string>; onChange(next: Set<string>): void; only?: ReadonlySet<string> }) {
  const shown = props.only ? props.permissions.filter((p) => props.only!.has(p.key)) : props.permissions;
  const groups = [...new Set(shown.map((p) => p.group))];
  return (
    <div class="perm-grid">
      {groups.map((g) => (
        <fieldset key={g}>
          <legend>{g}</legend>
          {shown
            .filter((p) => p.group === g)
            .map((p) => (
              <label class="choice" key={p.key}>
                <input
                  type="checkbox"
                  id={`${props.idPrefix}-${p.key}`}
                  checked={props.chosen.has(p.key)}
                  onChange={(e) => {
                    const next = new Set(props.chosen);
                    if (e.currentTarget.checked) next.add(p.key);
                    else next.delete(p.key);
                    props.onChange(next);
                  }}
                />
                <span>
                  {p.label} <code class="muted">{p.key}</code>
                  <span class="hint">{p.hint}</span>
                </span>
              </label>
            ))}
        </fieldset>
      ))}
    </div>
  );
}
