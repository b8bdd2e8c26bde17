/**
 * Loading a page's data: one call (or several at once) whose answer replaces a placeholder of a
 * reserved height, so the page does not jump when data arrives; an API error is shown with the
 * server's own message. `reload` reads again after a change.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api";
import { Alert } from "../ui";

/** The server's message for a failed call, else `fallback`. */
export function errorText(e: unknown, fallback = "That did not work."): string {
  return e instanceof ApiError ? e.message : fallback;
}

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  reload(): Promise<void>;
  /** Replace the data without a round trip (an answer that carries the new state). */
  set(data: T): void;
}

/** Load `fetcher()` now and whenever `deps` change. */
export function useLoad<T>(fetcher: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const reload = () =>
    fetcher()
      .then((d) => {
        setData(d);
        setError(null);
      })
      .catch((e) => setError(errorText(e, "Could not load this page.")));
  useEffect(() => {
    setData(null);
    setError(null);
    void reload();
  }, deps);
  return { data, error, reload, set: setData };
}

/** A page's changes: one at a time, the outcome shown above the page, the data read again after. */
export interface Actions {
  busy: boolean;
  ok: string | null;
  error: string | null;
  /** Run `what`, whose answer is the success message; on success the page's data is read again. */
  run(what: () => Promise<string>): Promise<void>;
}

/**
 * The change handling every editing page shares. `settle` runs after each change, done or failed
 * (close a confirmation); `succeeded` only after one that worked (close a form).
 */
export function useActions(reload: () => Promise<void>, hooks: { settle?(): void; succeeded?(): void } = {}): Actions {
  const [busy, setBusy] = useState(false);
  const [ok, setOk] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function run(what: () => Promise<string>) {
    setBusy(true);
    setError(null);
    setOk(null);
    try {
      setOk(await what());
      hooks.succeeded?.();
      await reload();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
      hooks.settle?.();
    }
  }
  return { busy, ok, error, run };
}

/** The outcome of the last change: its error, or its success message. */
export function Outcome(props: { of: Actions }) {
  return (
    <>
      {props.of.error && <Alert>{props.of.error}</Alert>}
      {props.of.ok && <Alert kind="ok">{props.of.ok}</Alert>}
    </>
  );
}

/** The placeholder while `what` loads (its height reserved), or the error that stopped it. */
export function Pending(props: { what: string; error: string | null; tall?: boolean }) {
  if (props.error) return <Alert>{props.error}</Alert>;
  return (
    <p class={props.tall ? "loading tall" : "loading"} aria-busy="true">
      Loading {props.what}…
    </p>
  );
}

/** What an empty list says, in the list's place. */
export function Empty(props: { children: ComponentChildren }) {
  return <p class="muted empty">{props.children}</p>;
}

/** A table that scrolls sideways on a narrow screen instead of widening the page. */
export function Scroll(props: { children: ComponentChildren }) {
  return <div class="table-scroll">{props.children}</div>;
}
