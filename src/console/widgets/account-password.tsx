/**
 * The Account page's password card: `POST /api/v1/auth/password` with the current password; the
 * server ends the person's other sessions and applies its password policy (decision 0285).
 */
import { useState } from "preact/hooks";
import { api } from "../api";
import { Alert } from "../ui";
import { errorText } from "./load";

export function PasswordCard() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [done, setDone] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function change(e: Event) {
    e.preventDefault();
    setError(null);
    setDone(false);
    if (next !== again) {
      setError("The two new passwords differ.");
      return;
    }
    setBusy(true);
    try {
      await api("POST", "/api/v1/auth/password", { current_password: current, new_password: next });
      setCurrent("");
      setNext("");
      setAgain("");
      setDone(true);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card" aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      {done && (
        <div class="alert alert-ok" role="status">
          Password changed. Your other sessions were signed out.
        </div>
      )}
      {error && <Alert>{error}</Alert>}
      <form onSubmit={(e) => void change(e)} class="grid-form">
        <div>
          <label for="password-current">Current password</label>
          <input id="password-current" type="password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />
        </div>
        <div>
          <label for="password-new">New password</label>
          <input id="password-new" type="password" autocomplete="new-password" required minLength={12} value={next} onInput={(e) => setNext(e.currentTarget.value)} />
        </div>
        <div>
          <label for="password-again">New password again</label>
          <input id="password-again" type="password" autocomplete="new-password" required minLength={12} value={again} onInput={(e) => setAgain(e.currentTarget.value)} />
        </div>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Change password
          </button>
        </div>
      </form>
    </section>
  );
}
