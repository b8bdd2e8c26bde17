/**
 * ops's own credentials never reach an app through the ingress. A person signs in to the console
 * in Chromium on a service's host name (`web.production.shop.localhost`, the API's port), so the
 * browser holds ops's HttpOnly session cookie for that host; browsers do not scope cookies by
 * port, so visiting the app on the same host name through the ingress sends it along. The app
 * (a raw replica that echoes the head it received) must see the person's other cookies and never
 * `ops_session`, nor an Authorization header carrying an ops token in any form ops's API accepts.
 * And the app cannot set ops's cookie in that browser: its `Set-Cookie` for it never passes, and
 * over HTTPS the cookie is `__Host-ops_session`, which no other host can plant.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { TCPSocketListener } from "bun";
import type { Browser, Page } from "playwright-core";
import { createTestApp, expectStatus, type TestApp } from "./harness";
import { talk } from "./support/ingress";
import { makeOwner, type Person } from "./fixtures";
import { launchChromium, WallClock } from "./chromium";
import { createIngress, type Ingress } from "../src/adapters/ingress";

let t: TestApp;
let admin: Person;
let browser: Browser;
let ingress: Ingress;
let echo: TCPSocketListener<{ buf: string }>;
let ingressPort: number;
const HOST = "web.production.shop.localhost";
let planted_session = "";

beforeAll(async () => {
  t = await createTestApp({ clock: new WallClock() });
  admin = await makeOwner(t, { email: "admin@ops.test" });
  echo = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "" };
      },
      data(s, b) {
        s.data.buf += b.toString("latin1");
        const end = s.data.buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = s.data.buf.slice(0, end);
        s.data.buf = s.data.buf.slice(end + 4);
        // An app that tries to set ops's session cookie (its own session, say) in its visitors' browsers.
        const planted = head.startsWith("GET /plant ")
          ? [`ops_session=${planted_session}; Path=/`, `__Host-ops_session=${planted_session}; Path=/`, `=ops_session=${planted_session}; Path=/`, "theme=light; Path=/"].map((c) => `Set-Cookie: ${c}\r\n`).join("")
          : "";
        s.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n${planted}Content-Length: ${Buffer.byteLength(head, "latin1")}\r\n\r\n${head}`);
      },
    },
  });
  ingress = createIngress();
  ingressPort = ingress.listen("127.0.0.1", 0).port;
  ingress.setService({ service: { project: "shop", environment: "production", service: "web" }, routes: [], upstreams: [{ host: "127.0.0.1", port: echo.port }] });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await ingress?.stop(100);
  echo?.stop(true);
  await t?.close();
});

/** Sign the admin in to the console in `page`, on the app's host name (the API's port). */
async function signInOnAppHost(page: Page): Promise<void> {
  await page.goto(`http://${HOST}:${t.port}/account`);
  await page.getByLabel("Email").fill(admin.email);
  await page.getByLabel("Password").fill(admin.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Sign in to ops" }).waitFor({ state: "detached" });
}

describe("ops's credentials through the ingress", () => {
  test("an estate admin's browser signed in to the console on the app's host name: the app never sees ops_session, it sees the other cookies", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInOnAppHost(page);
    await context.addCookies([{ name: "theme", value: "dark", domain: HOST, path: "/" }]);
    const held = (await context.cookies(`http://${HOST}:${ingressPort}/`)).map((c) => c.name).sort();
    expect(held).toEqual(["ops_session", "theme"]);

    await page.goto(`http://${HOST}:${ingressPort}/whoami`);
    const seen = await page.innerText("body");
    expect(seen).toStartWith("GET /whoami HTTP/1.1");
    expect(seen).toMatch(/\ncookie: theme=dark/i);
    expect(seen).not.toContain("ops_session");
    expect(seen).not.toContain("opss_");
    // The page and its favicon request.
    expect(ingress.metrics().credentialsStripped).toBeGreaterThanOrEqual(1);
    await context.close();
  });

  test("every Authorization form ops's API accepts for a token is removed: a tab after the scheme, stray characters in base64, one credential split over two fields", async () => {
    const token = admin.session;
    const b64 = Buffer.from(`git:${token}`).toString("base64");
    const forms = [
      `Authorization: Basic\t${b64}`,
      `Authorization: Basic ${b64.slice(0, 9)}!*.${b64.slice(9)}`,
      `Authorization: basic   ${b64.slice(0, 20)}\t${b64.slice(20)}`,
      `Authorization: Basic ${b64.slice(0, 16)}\r\nAuthorization: ${b64.slice(16)}`,
      `Authorization: bearer\t${token}`,
      `Authorization: ${token}`,
    ];
    for (const form of forms) {
      // ops's own API takes it as the admin…
      const api = await talk(t.port, `GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\n${form}\r\nConnection: close\r\n\r\n`);
      expect([form, api.text.slice(0, 12), api.text.includes(admin.email)]).toEqual([form, "HTTP/1.1 200", true]);
      // …so the ingress never hands it to an app.
      const app = await talk(ingressPort, `GET /whoami HTTP/1.1\r\nHost: ${HOST}\r\n${form}\r\nConnection: close\r\n\r\n`);
      expect([form, app.text.slice(0, 12)]).toEqual([form, "HTTP/1.1 200"]);
      expect([form, /authorization/i.test(app.text.slice(app.text.indexOf("\r\n\r\n")))]).toEqual([form, false]);
    }
  });

  test("an app cannot set ops's session cookie in a signed-in browser, by either name or as a nameless cookie; its other cookies are set", async () => {
    planted_session = (await makeOwner(t, { email: "app-owner@ops.test" })).session;
    const context = await browser.newContext();
    const page = await context.newPage();
    await signInOnAppHost(page);
    const before = (await context.cookies(`http://${HOST}:${t.port}/`)).find((c) => c.name === "ops_session")!.value;

    await page.goto(`http://${HOST}:${ingressPort}/plant`);
    expect(await page.innerText("body")).toStartWith("GET /plant HTTP/1.1");
    const jar = await context.cookies(`http://${HOST}:${t.port}/`);
    expect(jar.map((c) => c.name).sort()).toEqual(["ops_session", "theme"]);
    expect(jar.find((c) => c.name === "ops_session")!.value).toBe(before);
    expect(jar.some((c) => c.value.includes(planted_session))).toBe(false);
    // The browser is still signed in as its own person.
    await page.goto(`http://${HOST}:${t.port}/api/v1/me`);
    expect(await page.innerText("body")).toContain(admin.email);
    await context.close();
  });

  test("an Authorization header carrying an ops token (Bearer, or Basic as git sends it) is removed; an app's own is kept", async () => {
    const token = admin.session;
    expect(token).toStartWith("opss_");
    const via = (authorization: string) => fetch(`http://127.0.0.1:${ingressPort}/`, { headers: { host: HOST, authorization } }).then((r) => r.text());
    expect(await via(`Bearer ${token}`)).not.toMatch(/authorization/i);
    expect(await via(`Basic ${Buffer.from(`x:${token}`).toString("base64")}`)).not.toMatch(/authorization/i);
    expect(await via("Bearer the-app-s-own")).toMatch(/\nauthorization: Bearer the-app-s-own/i);
  });
});

describe("the console's cookie when ops is served over HTTPS", () => {
  test("is __Host-ops_session (Secure, Path=/, no Domain), the only name ops reads then; the ingress removes it like the other", async () => {
    const https = await createTestApp({ env: { OPS_PUBLIC_URL: "https://ops.test" } });
    try {
      const owner = await makeOwner(https, { email: "secure@ops.test" });
      const login = await https.request("POST", "/api/v1/auth/login", { body: { email: owner.email, password: owner.password, client: "console" } });
      await expectStatus(login, 200);
      const cookie = login.headers.get("set-cookie") ?? "";
      expect(cookie).toStartWith("__Host-ops_session=opss_");
      expect(cookie).toContain("; Path=/;");
      expect(cookie).toContain("; Secure");
      expect(cookie.toLowerCase()).not.toContain("domain=");
      const secret = cookie.slice("__Host-ops_session=".length, cookie.indexOf(";"));
      await expectStatus(await https.request("GET", "/api/v1/me", { headers: { cookie: `__Host-ops_session=${secret}` } }), 200);
      // The plain name is anyone's to set over http or from a sibling host: not read at all.
      await expectStatus(await https.request("GET", "/api/v1/me", { headers: { cookie: `ops_session=${secret}` } }), 401);
      const app = await talk(ingressPort, `GET /whoami HTTP/1.1\r\nHost: ${HOST}\r\nCookie: a=1; __Host-ops_session=${secret}\r\nConnection: close\r\n\r\n`);
      expect(app.text).toMatch(/\r\ncookie: a=1(\r\n|$)/i);
      expect(app.text).not.toContain(secret);
    } finally {
      await https.close();
    }
  });
});
