/**
 * Controls that follow the person's permissions: an action the API would refuse is shown
 * disabled, with the reason on hover and for screen readers, and stays focusable so a keyboard
 * user can read why (a `disabled` button cannot be focused). A form the person cannot submit
 * is not shown at all; `Denied` says in one line what is missing instead.
 */
import type { ComponentChildren } from "preact";
import type { PermissionKey } from "../../core/authz/catalog";
import type { Access, RouteEnvironment } from "../access";

interface ActionProps {
  access: Access;
  perm: PermissionKey;
  env: RouteEnvironment;
  onClick(): void;
  children: ComponentChildren;
  class?: string;
  type?: "button" | "submit";
  /** Also disabled for another reason (busy, nothing chosen): that reason, or true. */
  off?: string | boolean;
  label?: string;
}

/** A button for an action guarded by `perm` in `env`. */
export function Action(props: ActionProps) {
  const why = props.access.why(props.perm, props.env) || (typeof props.off === "string" ? props.off : "");
  const blocked = why !== "" || props.off === true;
  return (
    <button
      type={props.type ?? "button"}
      class={[props.class, blocked ? "blocked" : ""].filter(Boolean).join(" ") || undefined}
      aria-disabled={blocked ? "true" : undefined}
      title={why || undefined}
      aria-label={props.label}
      onClick={(e) => {
        if (blocked) {
          e.preventDefault();
          return;
        }
        if ((props.type ?? "button") === "button") props.onClick();
      }}
    >
      {props.children}
    </button>
  );
}

/** One line standing in for a form the person cannot use, with the reason. */
export function Denied(props: { access: Access; perm: PermissionKey; env: RouteEnvironment; what: string }) {
  return (
    <p class="muted denied" title={props.access.why(props.perm, props.env)}>
      {props.what}: {props.access.why(props.perm, props.env)}
    </p>
  );
}
