/**
 * The console shell: a header with navigation, and the screen for the current path. Screens that
 * need a person ask `GET /api/v1/me` first and show sign-in (then come back) when it says 401.
 */
import { useEffect, useState } from "preact/hooks";
import { api, ApiError, type Me } from "./api";
import { Alert, Link, navigate } from "./ui";
import { SignIn } from "./screens/sign-in";
import { DevicePage } from "./screens/device";
import { StatusPage } from "./screens/status";
import { AccountPage } from "./screens/account";
import { ProjectList } from "./screens/projects";
import { ProjectFrame } from "./project-frame";
import { OperatorsPage } from "./screens/operators";
import { NotificationsPage } from "./screens/notifications";
import { StatusAdminPage } from "./screens/status-admin";
import { NodesPage } from "./screens/nodes";
import { CliPage } from "./screens/cli";
import { accessOf } from "./access";

function currentLocation(): { path: string; query: URLSearchParams; full: string } {
  return { path: location.pathname, query: new URLSearchParams(location.search), full: location.pathname + location.search };
}

const TITLES: Record<string, string> = {
  "/status": "Status",
  "/device": "Connect a device",
  "/account": "Account",
  "/sign-in": "Sign in",
  "/": "Account",
  "/projects": "Projects",
  "/operators": "Operators",
  "/notifications": "Notifications",
  "/status/admin": "Status administration",
  "/nodes": "Nodes",
  "/cli": "CLI",
};

export function App() {
  const [loc, setLoc] = useState(currentLocation());
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [unread, setUnread] = useState(0);
  const countUnread = () =>
    api<{ unread: number }>("GET", "/api/v1/notifications/unread-count")
      .then((r) => setUnread(r.unread))
      .catch(() => setUnread(0));

  const loadMe = () =>
    api<Me>("GET", "/api/v1/me")
      .then((m) => {
        setMe(m);
        setError(null);
      })
      .catch((e) => {
        if (e instanceof ApiError && e.status === 401) setMe(null);
        else {
          setMe(null);
          setError(e instanceof ApiError ? e.message : "Could not reach the server.");
        }
      });

  useEffect(() => {
    if (me) void countUnread();
  }, [me]);

  useEffect(() => {
    const on = () => setLoc(currentLocation());
    addEventListener("popstate", on);
    void loadMe();
    return () => removeEventListener("popstate", on);
  }, []);

  useEffect(() => {
    document.title = `${TITLES[loc.path] ?? (loc.path.startsWith("/projects/") ? decodeURIComponent(loc.path.split("/")[2] ?? "") : "ops")} · ops`;
    document.getElementById("main")?.focus({ preventScroll: true });
  }, [loc.path]);

  async function signOut() {
    try {
      await api("POST", "/api/v1/auth/logout");
    } catch {
      // Signed out already, or the server is gone: either way forget the person here.
    }
    setMe(null);
    navigate("/sign-in");
  }

  let screen;
  const needsPerson = loc.path !== "/status";
  const estate = me ? accessOf(me, null) : null;
  if (loc.path === "/status") screen = <StatusPage />;
  else if (me === undefined) screen = <p aria-busy="true">Loading…</p>;
  else if (me === null || loc.path === "/sign-in") {
    const next = loc.path === "/sign-in" ? (loc.query.get("next") ?? "/account") : loc.full;
    screen =
      me && loc.path === "/sign-in" ? (
        <Alert kind="info">You are signed in as {me.actor}.</Alert>
      ) : (
        <SignIn
          next={next}
          onSignedIn={() => {
            void loadMe().then(() => navigate(next.startsWith("/") && !next.startsWith("//") ? next : "/account"));
          }}
        />
      );
  } else if (loc.path === "/device") screen = <DevicePage me={me} initialCode={loc.query.get("user_code") ?? ""} />;
  else if (loc.path === "/account" || loc.path === "/") screen = <AccountPage me={me} onChange={() => void loadMe()} />;
  else if (loc.path === "/projects") screen = <ProjectList me={me} />;
  else if (loc.path === "/operators") screen = <OperatorsPage me={me} />;
  else if (loc.path === "/notifications") screen = <NotificationsPage onRead={() => void countUnread()} />;
  else if (loc.path === "/status/admin") screen = <StatusAdminPage me={me} />;
  else if (loc.path === "/nodes") screen = <NodesPage me={me} />;
  else if (loc.path === "/cli") screen = <CliPage me={me} />;
  else if (loc.path.startsWith("/projects/"))
    screen = <ProjectFrame me={me} segments={loc.path.slice("/projects/".length).split("/").filter(Boolean).map(decodeURIComponent)} query={loc.query} />;
  else screen = <Alert kind="info">Nothing here. Try the <Link href="/account">account page</Link>.</Alert>;

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href={me ? "/account" : "/status"} class="brand">
          ops
        </Link>
        <nav aria-label="Main">
          <Link href="/status">Status</Link>
          {me && <Link href="/projects">Projects</Link>}
          {me && (
            <Link href="/notifications">
              Notifications{unread > 0 && <span class="badge badge-unread" aria-label={`${unread} unread`}>{unread}</span>}
            </Link>
          )}
          {me && <Link href="/cli">CLI</Link>}
          {estate?.can("operators.manage", null) && <Link href="/operators">Operators</Link>}
          {estate?.can("estate.manage", null) && <Link href="/status/admin">Status admin</Link>}
          {estate?.can("estate.manage", null) && <Link href="/nodes">Nodes</Link>}
          {me && <Link href="/device">Connect a device</Link>}
          {me && <Link href="/account">Account</Link>}
        </nav>
        <div class="who">
          {me ? (
            <>
              <span class="muted">{me.actor}</span>
              <button type="button" class="small" onClick={() => void signOut()}>
                Sign out
              </button>
            </>
          ) : (
            needsPerson || (
              <Link href="/sign-in" class="button small">
                Sign in
              </Link>
            )
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1} class={loc.path.startsWith("/projects/") ? "wide" : undefined}>
        {error && needsPerson && <Alert>{error}</Alert>}
        {screen}
      </main>
    </>
  );
}
