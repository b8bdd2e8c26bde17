/**
 * A confirmation in the page (not `window.confirm`): a heading, what will happen, and — for
 * deletes the API wants confirmed by name — a field where the person types the name. Focus moves
 * to it when it opens; Escape cancels.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export interface ConfirmProps {
  title: string;
  children: ComponentChildren;
  /** The confirm button's text ("Yes, delete"). */
  yes: string;
  danger?: boolean;
  /** When set, the person types this (a resource's name) before the button works. */
  typeToConfirm?: string;
  busy?: boolean;
  onConfirm(typed: string): void;
  onCancel(): void;
}

let seq = 0;

export function Confirm(props: ConfirmProps) {
  const [typed, setTyped] = useState("");
  const [id] = useState(() => `confirm-${++seq}`);
  const first = useRef<HTMLInputElement | HTMLButtonElement | null>(null);
  useEffect(() => {
    first.current?.focus();
  }, []);
  const ready = !props.typeToConfirm || typed === props.typeToConfirm;
  return (
    <div
      class="confirm card"
      role="alertdialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-text`}
      onKeyDown={(e) => {
        if (e.key === "Escape") props.onCancel();
      }}
    >
      <h3 id={`${id}-title`}>{props.title}</h3>
      <div id={`${id}-text`}>{props.children}</div>
      {props.typeToConfirm && (
        <>
          <label for={`${id}-typed`}>
            Type <code>{props.typeToConfirm}</code> to confirm
          </label>
          <input id={`${id}-typed`} ref={(el) => {
            first.current = el;
          }} autocomplete="off" spellcheck={false} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        </>
      )}
      <div class="actions">
        <button
          type="button"
          ref={(el) => {
            if (!props.typeToConfirm) first.current = el;
          }}
          class={props.danger ? "danger" : "primary"}
          disabled={!ready || props.busy}
          onClick={() => props.onConfirm(typed)}
        >
          {props.yes}
        </button>
        <button type="button" disabled={props.busy} onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
