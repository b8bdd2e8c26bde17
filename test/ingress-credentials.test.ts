/**
 * ops's own credentials never reach an app through the ingress. A person signs in to the console
 * in Chromium on a service's host name (`web.production.shop.localhost`, the API's port), so the
 * browser holds ops's HttpOnly session cookie for that host; browsers do not scope cookies by
 * port, so visiting the app on the same host name through the ingress sends it along. The app
 * (a raw replica that echoes the head it received) must see the person's other cookies and never
 * `ops_session`, nor an Authorization header carrying an ops token.
 */
import { describe, test, expect, beforeAll, afterAll } from "bun:test";
import type { TCPSocketListener } from "bun";
import type { Browser } from "playwright-core";
import { createTestApp, type TestApp } from "./harness";
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
        s.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(head, "latin1")}\r\n\r\n${head}`);
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

describe("ops's credentials through the ingress", () => {
  test("an estate admin's browser signed in to the console on the app's host name: the app never sees ops_session, it sees the other cookies", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://${HOST}:${t.port}/account`);
    await page.getByLabel("Email").fill(admin.email);
    await page.getByLabel("Password").fill(admin.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sign in to ops" }).waitFor({ state: "detached" });
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

  test("an Authorization header carrying an ops token (Bearer, or Basic as git sends it) is removed; an app's own is kept", async () => {
    const token = admin.session;
    expect(token).toStartWith("opss_");
    const via = (authorization: string) => fetch(`http://127.0.0.1:${ingressPort}/`, { headers: { host: HOST, authorization } }).then((r) => r.text());
    expect(await via(`Bearer ${token}`)).not.toMatch(/authorization/i);
    expect(await via(`Basic ${Buffer.from(`x:${token}`).toString("base64")}`)).not.toMatch(/authorization/i);
    expect(await via("Bearer the-app-s-own")).toMatch(/\nauthorization: Bearer the-app-s-own/i);
  });
});
