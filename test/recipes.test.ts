/**
 * The recipes of docs/guide/recipes.md, run as a user runs them (issue 27): a real `ops serve`
 * child process with its ingress, the real `git` pushing each recipe's files to the built-in host,
 * and the app answering through the ingress. Node (`npm ci`, `node server.js`) and Python in a
 * venv (`python3 -m venv .venv`, whose `.venv/bin/python3 -> /usr/bin/python3` the image keeps as a
 * link), and with `pip install --target .deps`. The Python app also says whether the sandbox sees
 * the host's pip configuration. A static site (`npm run build`, `output = "dist"`, `python3 -m
 * http.server`), Go (`go build`) and Rust (`cargo build --release --locked`) with the toolchains
 * under the host's /usr (Debian's golang-go and cargo, which .ci/run installs): a missing
 * toolchain fails its build, and so the test.
 */
import { describe, test, expect, beforeAll, afterAll, setDefaultTimeout } from "bun:test";
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { freePort, tempDir, waitFor } from "./harness";
import { cloneUrl, git, workDir } from "./sources-git-helpers";
import { runCli } from "../src/main";
import { recipeBlock } from "./support/recipes";

setDefaultTimeout(240_000);

const MAIN = path.resolve(import.meta.dir, "../src/main.ts");
const EMAIL = "owner@ops.test";
const PASSWORD = "recipes-owner-password";
const root = tempDir("ops-recipes-");
chmodSync(root, 0o755);
const dataDir = path.join(root, "data");
const ingressPort = freePort();
let base = "";
let child: ReturnType<typeof Bun.spawn> | null = null;
let token = "";


async function api<T = any>(method: string, p: string, body?: unknown, expected?: number): Promise<T> {
  const res = await fetch(`${base}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (expected !== undefined && res.status !== expected) throw new Error(`${method} ${p}: expected ${expected}, got ${res.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

async function until<T>(what: string, check: () => Promise<T | null | undefined | false>, ms = 180_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(300);
  }
}

/** Push `files` as the repository `shop/<repo>` followed by the service `service`; the rollout's timeline row. */
async function pushRecipe(repo: string, service: string, files: Record<string, string>, health = "/healthz") {
  await api("POST", "/api/v1/projects/shop/sources", { repo: `shop/${repo}` }, 201);
  await api("PUT", `/api/v1/projects/shop/resources/service/${service}`, { spec: { source: { repo: `shop/${repo}` }, health_check_path: health } }, 201);
  const work = workDir(`ops-recipes-${repo}-`);
  const dir = path.join(work, repo);
  await git(work, "clone", "-q", cloneUrl(base, `shop/${repo}`, token), repo);
  await git(dir, "checkout", "-q", "-B", "main");
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), text);
  }
  await git(dir, "add", "-A");
  await git(dir, "commit", "-q", "-m", `The ${repo} recipe`);
  await git(dir, "push", "-q", "origin", "main");
  return until(`${service} to be deployed`, async () => {
    const rows = await api<any[]>("GET", `/api/v1/projects/shop/deployments?service=${service}`);
    const row = rows.find((r) => r.message === `The ${repo} recipe`);
    return row && ["healthy", "failed", "rolled_back", "refused"].includes(row.state) ? row : null;
  });
}

async function viaIngress(service: string, p = "/"): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${ingressPort}${p}`, { headers: { host: `${service}.production.shop.localhost` } });
  return `${res.status} ${await res.text()}`;
}

beforeAll(async () => {
  mkdirSync(dataDir, { mode: 0o755 });
  const port = freePort();
  child = Bun.spawn([process.execPath, MAIN, "serve", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`], {
    cwd: root,
    env: { ...process.env, OPS_BOOTSTRAP_EMAIL: EMAIL, OPS_BOOTSTRAP_PASSWORD: PASSWORD, OPS_INGRESS_LISTEN: `127.0.0.1:${ingressPort}`, OPS_SCHEDULER_TICK_MS: "100", OPS_BUILD_MEMORY_MB: "384", OPS_LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "inherit",
  });
  base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/readyz`, 200, 30_000);
  token = (await api<{ token: string }>("POST", "/api/v1/auth/login", { email: EMAIL, password: PASSWORD, client: "cli" }, 200)).token;
  await api("POST", "/api/v1/projects", { slug: "shop", name: "Shop" }, 201);
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM");
    await child.exited;
  }
  rmSync(root, { recursive: true, force: true });
});

describe("docs/guide/recipes.md, pushed and run", () => {
  test("Node: npm ci, node server.js", async () => {
    const row = await pushRecipe("node-app", "web", {
      "ops.toml": recipeBlock("Node", "ops.toml"),
      "package.json": recipeBlock("Node", "package.json"),
      "package-lock.json": recipeBlock("Node", "package-lock.json"),
      "server.js": recipeBlock("Node", "server.js"),
    });
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("web")).toBe("200 hello from node");
  });

  test("Python in a venv: python3 -m venv .venv, .venv/bin/pip install, .venv/bin/python app.py", async () => {
    const row = await pushRecipe("py-app", "api", {
      "ops.toml": recipeBlock("Python in a virtual environment", "ops.toml"),
      "requirements.txt": recipeBlock("Python in a virtual environment", "requirements.txt"),
      "app.py": recipeBlock("Python in a virtual environment", "app.py"),
    });
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("api")).toBe("200 hello from python");
    // The host's pip configuration (a mirror, a CA) is visible read-only inside the sandbox.
    expect(await viaIngress("api", "/pip-conf")).toBe(`200 ${existsSync("/etc/pip.conf") ? "present" : "absent"}`);
  });

  test("Python with --target: pip install --target .deps, PYTHONPATH=.deps python3 app.py", async () => {
    const row = await pushRecipe("py-target-app", "pyt", {
      "ops.toml": recipeBlock("Python with `--target`", "ops.toml").replace("[services.api]", "[services.pyt]"),
      "requirements.txt": recipeBlock("Python in a virtual environment", "requirements.txt"),
      "app.py": recipeBlock("Python in a virtual environment", "app.py"),
    });
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("pyt")).toBe("200 hello from python");
  });

  test("a static site: npm ci, npm run build, output = dist served by python3 -m http.server", async () => {
    const row = await pushRecipe(
      "site-app",
      "site",
      {
        "ops.toml": recipeBlock("A static site", "ops.toml"),
        "package.json": recipeBlock("A static site", "package.json"),
        "package-lock.json": recipeBlock("A static site", "package-lock.json"),
        "build.js": recipeBlock("A static site", "build.js"),
      },
      "/",
    );
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("site")).toContain("<p>hello from a static site</p>");
    // Only the output folder became the image: the sources are not served.
    expect(await viaIngress("site", "/build.js")).toStartWith("404 ");
  });

  test("Go: go build with the host's go, ./server", async () => {
    const row = await pushRecipe("go-app", "goapi", {
      "ops.toml": recipeBlock("Go", "ops.toml").replace("[services.api]", "[services.goapi]"),
      "go.mod": recipeBlock("Go", "go.mod"),
      "main.go": recipeBlock("Go", "main.go"),
    });
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("goapi")).toBe("200 hello from go");
  });

  test("Rust: cargo build --release --locked with the host's cargo, ./target/release/api", async () => {
    const row = await pushRecipe("rust-app", "rustapi", {
      "ops.toml": recipeBlock("Rust", "ops.toml").replace("[services.api]", "[services.rustapi]"),
      "Cargo.toml": recipeBlock("Rust", "Cargo.toml"),
      "Cargo.lock": recipeBlock("Rust", "Cargo.lock"),
      "src/main.rs": recipeBlock("Rust", "src/main.rs"),
    });
    expect({ state: row.state, text: row.state_text }).toMatchObject({ state: "healthy" });
    expect(await viaIngress("rustapi")).toBe("200 hello from rust");
  });

  test("ops builds lists what the pushes built, newest first; --service narrows; an unknown service exits 1", async () => {
    const ops = async (...argv: string[]) => {
      let out = "";
      let err = "";
      const code = await runCli(argv, { stdout: (x) => void (out += x), stderr: (x) => void (err += x), env: { HOME: root, OPS_SERVER: base, OPS_TOKEN: token }, cwd: root });
      return { code, out, err };
    };
    const all = await ops("builds", "--project", "shop");
    expect(all.code).toBe(0);
    const lines = all.out.trim().split("\n");
    expect(lines[0]).toMatch(/^ID +STATUS +SERVICE +ENV +COMMIT +BRANCH +TRIGGER +QUEUED +MESSAGE$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(1, 3))).toEqual([
      ["healthy", "rustapi"],
      ["healthy", "goapi"],
      ["healthy", "site"],
      ["healthy", "pyt"],
      ["healthy", "api"],
      ["healthy", "web"],
    ]);
    expect(all.out).toContain("The py-app recipe");
    const api = await ops("builds", "--project", "shop", "--service", "api", "--json");
    expect((JSON.parse(api.out) as Array<{ service: string; trigger: string }>).map((b) => [b.service, b.trigger])).toEqual([["api", "push"]]);
    const nope = await ops("builds", "--project", "shop", "--service", "nope");
    expect(nope.code).toBe(1);
    expect(nope.err).toContain('no service "nope" in shop');
  });
});
