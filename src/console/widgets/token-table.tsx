/**
 * A list of tokens with a Revoke button each, as the Account page (the person's own tokens) and a
 * project's Access page (the tokens pinned to the project) show them: name, [operator], kind,
 * role, [project], expires, last used. A revoked token keeps its row, marked revoked.
 */
import type { Token } from "../api";
import { when, ActionsHeader } from "../ui";

export function TokenTable<T extends Token>(props: {
  tokens: T[];
  /** A caption for screen readers. */
  caption?: string;
  /** The optional columns: whose token it is, and the project it is pinned to. */
  show: { operator?: boolean; project?: boolean };
  /** Why this person may not revoke the token ("" when they may): the button stays, explaining. */
  blocked?(token: T): string;
  onRevoke(token: NoInfer<T>): void;
}) {
  return (
    <table class="tokens">
      {props.caption && <caption class="visually-hidden">{props.caption}</caption>}
      <thead>
        <tr>
          <th scope="col">Name</th>
          {props.show.operator && <th scope="col">Operator</th>}
          <th scope="col">Kind</th>
          <th scope="col">Role</th>
          {props.show.project && <th scope="col">Project</th>}
          <th scope="col">Expires</th>
          <th scope="col">Last used</th>
          <ActionsHeader />
        </tr>
      </thead>
      <tbody>
        {props.tokens.map((tk) => {
          const why = props.blocked?.(tk) ?? "";
          return (
            <tr key={tk.id} class={tk.revoked ? "revoked" : undefined}>
              <td>{tk.name}</td>
              {props.show.operator && <td>{tk.operator}</td>}
              <td>{tk.kind}</td>
              <td>{tk.role_name}</td>
              {props.show.project && <td>{tk.project ?? "any"}</td>}
              <td>{tk.expires_at ? when(tk.expires_at) : "never"}</td>
              <td>{when(tk.last_used)}</td>
              <td>
                {tk.revoked ? (
                  <span class="tag">revoked</span>
                ) : (
                  <button type="button" class={why ? "small blocked" : "small"} aria-disabled={why ? "true" : undefined} title={why || undefined} aria-label={`Revoke token ${tk.name}`} onClick={() => why || props.onRevoke(tk)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
