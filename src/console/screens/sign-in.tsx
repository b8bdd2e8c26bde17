/**
 * Sign-in: email and password, then the authenticator code when the account has MFA in force
 * (the server answers 401 `mfa_required`). The session arrives as an HttpOnly cookie.
 */
import { useRef, useState, useEffect } from "preact/hooks";
import { api, ApiError } from "../api";
import { Alert } from "../ui";

export function SignIn(props: { onSignedIn: () => void; next: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [needCode, setNeedCode] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const codeRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (needCode) codeRef.current?.focus();
  }, [needCode]);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api("POST", "/api/v1/auth/login", { email, password, client: "console", ...(needCode ? { code: code.replace(/\s/g, "") } : {}) });
      props.onSignedIn();
    } catch (err) {
      if (err instanceof ApiError && err.code === "mfa_required" && !needCode) {
        setNeedCode(true);
      } else if (err instanceof ApiError && err.code === "mfa_required") {
        setError("That code is not valid. Enter the current 6-digit code from your authenticator app.");
      } else {
        setError(err instanceof ApiError ? err.message : "Sign-in failed.");
      }
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card narrow" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in to ops</h1>
      {props.next !== "/" && props.next !== "/account" && <p class="muted">Sign in to continue to {props.next.split("?")[0]}.</p>}
      <form onSubmit={submit} noValidate>
        {!needCode && (
          <>
            <label for="email">Email</label>
            <input id="email" name="email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
          </>
        )}
        {needCode && (
          <>
            <p>Your account is protected with two-factor authentication.</p>
            <label for="code">Authenticator code</label>
            <input
              id="code"
              name="code"
              class="otp"
              ref={codeRef}
              inputMode="numeric"
              autocomplete="one-time-code"
              pattern="[0-9 ]*"
              maxLength={8}
              required
              aria-describedby="code-hint"
              value={code}
              onInput={(e) => setCode(e.currentTarget.value)}
            />
            <p id="code-hint" class="hint">
              The 6-digit code your authenticator app shows for ops.
            </p>
          </>
        )}
        {error && <Alert>{error}</Alert>}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {busy ? "Signing in…" : needCode ? "Verify" : "Sign in"}
          </button>
          {needCode && (
            <button
              type="button"
              onClick={() => {
                setNeedCode(false);
                setCode("");
                setError(null);
              }}
            >
              Back
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
