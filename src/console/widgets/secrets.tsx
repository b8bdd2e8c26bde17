/**
 * What the two Secrets pages share: their tabs, the write-only value field — an uncontrolled
 * input whose value is never kept in the page's state and is emptied as soon as it is sent, so a
 * secret never stays in the page after it left for the API — and a group's variable as listed
 * (also read by a database's page, for the variable it writes).
 */
import { Link } from "../ui";

/** A secret group's variable as the API lists it: the value only for a `text` variable, and only to a reader of values. */
export interface SecretVariable {
  name: string;
  kind: string;
  has_value: boolean;
  /** Written since the group was last rendered into its services. */
  pending: boolean;
  version: number;
  updated_at?: string | null;
  value?: string | null;
}

export function SecretTabs(props: { slug: string; current: "groups" | "services"; env: string }) {
  return (
    <nav class="tabs sub" aria-label="Secrets">
      <Link href={`/projects/${props.slug}/secrets?environment=${encodeURIComponent(props.env)}`} current={props.current === "groups"}>
        Secret groups
      </Link>
      <Link href={`/projects/${props.slug}/secrets/services?environment=${encodeURIComponent(props.env)}`} current={props.current === "services"}>
        Per-service secrets
      </Link>
    </nav>
  );
}

/** The value of a secret being set: form field `value`; a password field unless it is text. */
export function ValueField(props: { id: string; secret: boolean }) {
  return (
    <div>
      <label for={props.id}>Value</label>
      {props.secret ? (
        <input id={props.id} name="value" type="password" required autocomplete="new-password" spellcheck={false} />
      ) : (
        <input id={props.id} name="value" type="text" required autocomplete="off" spellcheck={false} />
      )}
    </div>
  );
}
