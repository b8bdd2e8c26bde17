/**
 * `ops doctor`'s checks of an engine runtime (OPS_RUNTIME=docker or swarm, decision 0615), appended
 * after the sandbox checks (src/commands/doctor.ts). Each asks the Engine API what ops will ask it:
 * - the engine answers at OPS_DOCKER_HOST (its version and API version; the TLS files readable);
 * - swarm: it is a manager (`GET /info`: LocalNodeState active, ControlAvailable);
 * - swarm: each node's state and availability (a node down fails);
 * - swarm: the nodes reach ops's registry at OPS_PUBLIC_URL's host (also where they reach ops's
 *   public URL, its token realm): a `global` service (one task per node) of the newest image the
 *   given token may pull, by digest, with that token in X-Registry-Auth as `--with-registry-auth`
 *   sends it, `/bin/true` never restarted; per node, a task that ran, completed or failed after its
 *   image was there reached the registry, a task refused for want of the image did not. The service
 *   is removed after.
 *
 * The pull uses the credential the runtime gives the nodes (a pull-only registry token signed with
 * the data dir's registry key, decision 0615), or an ops token given with `--registry-token`; it
 * is skipped without either, or without an image yet.
 * Docker 20.10 writes why a swarm task's pull failed only into that node's daemon log (the task
 * says "No such image"), so the manager, itself a node, pulls the image through its own API too:
 * its answer is the engine's own message, and its cause is named with its fix.
 */
import { accessSync, constants } from "node:fs";
import { randomBytes } from "node:crypto";
import { engineClient, type EngineClient } from "./engine-api";
import { nodesOf, type EngineNode, type EngineTask } from "./swarm-state";
import { filterOf } from "./swarm-objects";
import { L } from "./swarm-spec";
import type { DoctorCheck } from "../sandbox/doctor-types";
import type { Core } from "../../core/core";
import { allProjects, listProjects } from "../../domains/access/service";
import { projectImages } from "../../domains/registries/service";

export interface EngineDoctorSettings {
  runtime: "process" | "docker" | "swarm";
  /** OPS_DOCKER_HOST. */
  dockerHost: string;
  /** OPS_DOCKER_TLS_CA, _CERT and _KEY. */
  dockerTls: { ca: string; cert: string; key: string } | null;
  /** OPS_PUBLIC_URL: its host is the registry the nodes pull from. */
  publicUrl: string;
  /** An ops token with packages.read where the image lives (`--registry-token`); null: the runtime's own pull credentials, else the check is skipped. */
  registryToken: string | null;
  /** The newest image of a service that `token` may pull from ops's registry (null: of any project), or null (`newestImageFor`). */
  newestImage(token: string | null): Promise<NewestImage | null> | NewestImage | null;
  /**
   * The pull credential the runtime gives the nodes for a repository (a pull-only registry token,
   * decision 0615), when the data dir's registry key is at hand: the check then pulls exactly as
   * a deploy does, and needs no ops token.
   */
  runtimePullToken?(repository: string): Promise<string>;
  /** The dev.ops.instance label of the check's service (default "ops"). */
  instance?: string;
  /** How long each node's task may take (default 60 s). */
  waitMs?: number;
}

export interface NewestImage {
  /** `<project>/<service>`. */
  repository: string;
  digest: string;
  pushedAt: string;
}

/** The check names (a node's and a node's pull carry the node's name). */
export const ENGINE_CHECK = {
  engine: "engine API",
  manager: "swarm manager",
  node: (name: string) => `node ${name}`,
  registry: "registry from the nodes",
  pull: (name: string) => `registry from node ${name}`,
} as const;

/** A check that could not run for want of something outside it: printed as `skip`, never failed. */
export const SKIPPED = "skipped: ";
export const isSkipped = (c: DoctorCheck): boolean => c.ok && c.detail.startsWith(SKIPPED);

const ok = (name: string, detail: string): DoctorCheck => ({ name, ok: true, detail, fix: null });
const fail = (name: string, detail: string, fix: string): DoctorCheck => ({ name, ok: false, detail, fix });
const skip = (name: string, why: string, fix: string): DoctorCheck => ({ name, ok: true, detail: `${SKIPPED}${why}`, fix });

/** The engine checks for `s.runtime` (none for the process runtime). */
export async function engineChecks(s: EngineDoctorSettings): Promise<DoctorCheck[]> {
  if (s.runtime === "process") return [];
  const reached = await engineAnswers(s);
  if (!reached.engine || s.runtime === "docker") return [reached.check];
  const engine = reached.engine;
  const manager = await managerCheck(engine);
  if (!manager.ok) return [reached.check, manager];
  const raw = await engine.json<Array<EngineNode & { Status: { Message?: string }; ManagerStatus?: { Reachability?: string; Leader?: boolean } }>>("GET", "/nodes");
  raw.sort((a, b) => (a.Description?.Hostname ?? a.ID).localeCompare(b.Description?.Hostname ?? b.ID));
  const nodes = nodesOf(raw);
  const nodeChecks = raw.map((n) => nodeCheck(n, nodes.get(n.ID)!.addr));
  return [reached.check, manager, ...nodeChecks, ...(await registryChecks(s, engine))];
}

/** (a) The Engine API answers at OPS_DOCKER_HOST. */
async function engineAnswers(s: EngineDoctorSettings): Promise<{ check: DoctorCheck; engine: EngineClient | null }> {
  const name = ENGINE_CHECK.engine;
  const how = s.runtime === "swarm" ? "the Swarm manager's Engine API" : "the Docker Engine API";
  if (s.dockerTls) {
    for (const [setting, file] of [["OPS_DOCKER_TLS_CA", s.dockerTls.ca], ["OPS_DOCKER_TLS_CERT", s.dockerTls.cert], ["OPS_DOCKER_TLS_KEY", s.dockerTls.key]] as const) {
      try {
        accessSync(file, constants.R_OK);
      } catch (e) {
        return { check: fail(name, `${setting}=${file} cannot be read: ${(e as Error).message}`, `make ${setting} a PEM file ops's user can read (docs/guide/run-on-more-than-one-machine.md makes the CA, the server's and the client's certificates)`), engine: null };
      }
    }
  }
  try {
    const engine = engineClient({ host: s.dockerHost, tls: s.dockerTls });
    const v = await engine.json<{ Version?: string; ApiVersion?: string; MinAPIVersion?: string; Os?: string; Arch?: string }>("GET", "/version");
    const tls = s.dockerTls ? " over TLS with client certificates" : s.dockerHost.startsWith("tcp://") ? " over plain TCP (no TLS: anyone who reaches that port controls the engine)" : "";
    const detail = `${how} answers at OPS_DOCKER_HOST=${s.dockerHost}${tls}: Docker Engine ${v.Version ?? "?"} (API ${v.ApiVersion ?? "?"}, ${v.Os ?? "?"}/${v.Arch ?? "?"})`;
    if (s.dockerHost.startsWith("tcp://") && !s.dockerTls) return { check: fail(name, detail, "serve the Engine API with tlsverify and set OPS_DOCKER_TLS_CA, OPS_DOCKER_TLS_CERT and OPS_DOCKER_TLS_KEY"), engine };
    return { check: ok(name, detail), engine };
  } catch (e) {
    const msg = (e as Error).message;
    const fix = s.dockerHost.startsWith("tcp://")
      ? "check that dockerd listens there with tlsverify (hosts in /etc/docker/daemon.json), that OPS_DOCKER_TLS_CA, _CERT and _KEY are the CA it trusts and a client certificate it signed, and that no firewall stands between ops and that port"
      : "install and start Docker (apt-get install docker.io; systemctl start docker), or set OPS_DOCKER_HOST to where its Engine API answers";
    return { check: fail(name, `${how} does not answer at OPS_DOCKER_HOST=${s.dockerHost}: ${msg}`, fix), engine: null };
  }
}

/** (b) The engine is a swarm manager: it can create services and list every node. */
async function managerCheck(engine: EngineClient): Promise<DoctorCheck> {
  const name = ENGINE_CHECK.manager;
  const info = await engine.json<{ Name?: string; Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean; NodeAddr?: string; Nodes?: number; Managers?: number; Error?: string; Cluster?: { ID?: string } } }>("GET", "/info");
  const sw = info.Swarm ?? {};
  const state = sw.LocalNodeState || "inactive";
  if (state !== "active") {
    return fail(name, `the engine ${info.Name ?? ""} is not in an active swarm (LocalNodeState ${state}${sw.Error ? `: ${sw.Error}` : ""})`, "run `docker swarm init --advertise-addr <its address>` on it (then `docker swarm join` on the other machines), or point OPS_DOCKER_HOST at a swarm's manager");
  }
  if (!sw.ControlAvailable) {
    return fail(name, `the engine ${info.Name ?? ""} (${sw.NodeAddr ?? "?"}) is a worker of its swarm: it cannot create services nor list the nodes`, "point OPS_DOCKER_HOST at a manager (`docker node ls` on a manager lists them; `docker node promote <node>` makes one)");
  }
  return ok(name, `${info.Name ?? "the engine"} (${sw.NodeAddr ?? "?"}) manages swarm ${(sw.Cluster?.ID ?? "").slice(0, 12)}: ${sw.Nodes ?? "?"} node${sw.Nodes === 1 ? "" : "s"}, ${sw.Managers ?? "?"} manager${sw.Managers === 1 ? "" : "s"}`);
}

/** (c) One node: fails when it is not ready (down, disconnected, unknown) or its manager is unreachable. */
function nodeCheck(n: EngineNode & { Status: { Message?: string }; ManagerStatus?: { Reachability?: string; Leader?: boolean } }, addr: string): DoctorCheck {
  const host = n.Description?.Hostname ?? n.ID.slice(0, 12);
  const role = n.ManagerStatus ? (n.ManagerStatus.Leader ? "manager (leader)" : "manager") : "worker";
  const availability = n.Spec.Availability ?? "active";
  const about = `${role} at ${addr || "?"}, ${n.Status.State}, availability ${availability}`;
  if (n.Status.State !== "ready") {
    return fail(ENGINE_CHECK.node(host), `${about}${n.Status.Message ? ` (${n.Status.Message})` : ""}: Swarm places nothing there and moves its replicas elsewhere`, `start Docker on ${host} (systemctl start docker) and check that it reaches the managers on 2377/tcp and the other nodes on 7946/tcp+udp and 4789/udp; a machine gone for good: docker node rm ${host}`);
  }
  if (n.ManagerStatus?.Reachability && n.ManagerStatus.Reachability !== "reachable") {
    return fail(ENGINE_CHECK.node(host), `${about}, its manager ${n.ManagerStatus.Reachability}`, `check Docker on ${host} and that the managers reach each other on 2377/tcp`);
  }
  const note = availability === "active" ? "" : `: Swarm places no new replica there (${availability}; docker node update --availability active ${host} undoes it)`;
  return ok(ENGINE_CHECK.node(host), `${about}${note}`);
}

/** Why a pull failed, by the engine's message: what to do about it. */
export function pullFix(message: string, registry: string): string {
  const m = message.toLowerCase();
  if (m.includes("http: server gave http response to https client")) return `ops's registry speaks plain HTTP: add "insecure-registries": ["${registry}"] to /etc/docker/daemon.json on every node and restart Docker, or serve ops over HTTPS (OPS_TLS=acme)`;
  if (m.includes("no such host")) return `the nodes cannot resolve ${registry.replace(/:\d+$/, "")}: give OPS_PUBLIC_URL a name their DNS resolves (or an address)`;
  if (m.includes("connection refused")) return `nothing listens at ${registry} as the nodes see it: OPS_PUBLIC_URL must be ops's address from the nodes, not a loopback one, and ops must listen there`;
  if (m.includes("i/o timeout") || m.includes("no route to host") || m.includes("network is unreachable")) return `the nodes get no answer from ${registry}: open the firewall between the nodes and ops's host on that port`;
  if (m.includes("x509") || m.includes("certificate")) return `the nodes do not trust ${registry}'s certificate: serve ops with a publicly trusted one (OPS_TLS=acme) or put its CA in /etc/docker/certs.d/${registry}/ca.crt on every node`;
  if (m.includes("pull access denied") || m.includes("unauthorized") || m.includes("denied") || m.includes("authentication required")) return "the token cannot pull that image: give --registry-token a token with packages.read in the image's project";
  if (m.includes("manifest unknown") || m.includes("not found")) return "ops's registry no longer holds that digest (collected, or another data dir): deploy the service again, then run ops doctor again";
  return `read the Docker daemon's log on the node (journalctl -u docker) for the pull of ${registry}`;
}

/** Docker's `X-Registry-Auth`: base64url of the JSON, padded (workers decode it with base64.URLEncoding). */
function registryAuthHeader(credentials: Record<string, string>): Record<string, string> {
  return { "x-registry-auth": Buffer.from(JSON.stringify(credentials)).toString("base64").replace(/\+/g, "-").replace(/\//g, "_") };
}

/** The manager pulls `ref` itself (`POST /images/create`): null when it pulled, else the engine's message. */
async function managerPull(engine: EngineClient, ref: string, auth: Record<string, string>): Promise<string | null> {
  try {
    const res = await engine.call("POST", `/images/create?fromImage=${encodeURIComponent(ref)}`, undefined, auth);
    const lines = (await res.text()).trim().split("\n");
    for (const line of lines.reverse()) {
      try {
        const o = JSON.parse(line) as { error?: string; errorDetail?: { message?: string } };
        if (o.error || o.errorDetail?.message) return o.errorDetail?.message ?? o.error!;
      } catch {
        // a torn progress line
      }
    }
    return null;
  } catch (e) {
    return (e as Error).message.replace(/^Docker Engine POST \S+: HTTP \d+: /, "");
  }
}

const RAN = new Set(["running", "complete"]);
const ENDED = new Set(["failed", "rejected", "shutdown", "orphaned", "remove"]);
const PULL_FAILED = /no such image|pull access denied|manifest unknown|no such host|connection refused|i\/o timeout|server gave http response to https client|unauthorized|authentication required|x509/i;

/** (d) The nodes reach ops's registry: one task per node of the newest image, pulled with the token. */
async function registryChecks(s: EngineDoctorSettings, engine: EngineClient): Promise<DoctorCheck[]> {
  const name = ENGINE_CHECK.registry;
  const registry = new URL(s.publicUrl).host;
  if (!s.registryToken && !s.runtimePullToken) {
    return [skip(name, `whether the nodes reach ops's registry at ${registry} needs a credential that may pull an image: run ops doctor where the data dir is (its registry key), or give an ops token`, "ops doctor --data-dir <ops's data dir>, or ops doctor --registry-token <an ops token with packages.read in a project that has deployed a service>")];
  }
  const image = await s.newestImage(s.registryToken);
  if (!image) return [skip(name, `ops's registry at ${registry} holds no image of a service${s.registryToken ? " that this token may pull" : ""} yet`, "deploy a service first (ops deploy), then run ops doctor again")];
  const ref = `${registry}/${image.repository}@${image.digest}`;
  const auth = s.registryToken ? registryAuthHeader({ username: "ops", password: s.registryToken, serveraddress: registry }) : registryAuthHeader({ registrytoken: await s.runtimePullToken!(image.repository), serveraddress: registry });
  const nodes = nodesOf(await engine.json<EngineNode[]>("GET", "/nodes"));
  const info = await engine.json<{ Swarm?: { NodeID?: string } }>("GET", "/info");
  const managerId = info.Swarm?.NodeID ?? "";
  const managerHeld = await engine.call("GET", `/images/${encodeURIComponent(ref)}/json`).then(() => true, () => false);
  const made = await engine.json<{ ID: string }>(
    "POST",
    "/services/create",
    {
      Name: `ops-doctor-${randomBytes(5).toString("hex")}`,
      Labels: { [L.instance]: s.instance ?? "ops", [L.kind]: "doctor" },
      TaskTemplate: {
        ContainerSpec: { Image: ref, Command: ["/bin/true"], Args: [], Labels: { [L.kind]: "doctor" } },
        RestartPolicy: { Condition: "none" },
        Resources: { Limits: { MemoryBytes: 32 * 1024 * 1024 } },
      },
      Mode: { Global: {} },
    },
    auth,
  );
  const out: DoctorCheck[] = [];
  try {
    const wanted = [...nodes.values()].filter((n) => n.ready && n.active);
    for (const n of nodes.values()) if (!wanted.includes(n)) out.push(skip(ENGINE_CHECK.pull(n.name), `node ${n.state}${n.active ? "" : ", not active"}: Swarm places no task there`, `bring ${n.name} back (see its node check), then run ops doctor again`));
    const verdict = new Map<string, EngineTask | "waiting">();
    const deadline = Date.now() + (s.waitMs ?? 60_000);
    while (Date.now() < deadline) {
      const tasks = await engine.json<EngineTask[]>("GET", `/tasks?filters=${filterOf({ service: [made.ID] })}`);
      for (const n of wanted) {
        const mine = tasks.filter((t) => t.NodeID === n.id).sort((a, b) => Date.parse(b.CreatedAt) - Date.parse(a.CreatedAt))[0];
        verdict.set(n.id, mine && (RAN.has(mine.Status.State) || ENDED.has(mine.Status.State)) ? mine : "waiting");
      }
      if (wanted.every((n) => verdict.get(n.id) !== "waiting")) break;
      await Bun.sleep(500);
    }
    let managerSaid: string | null | undefined;
    const askManager = async () => (managerSaid === undefined ? (managerSaid = await managerPull(engine, ref, auth)) : managerSaid);
    for (const n of wanted) {
      const t = verdict.get(n.id);
      const check = ENGINE_CHECK.pull(n.name);
      if (!t || t === "waiting") {
        out.push(fail(check, `no answer within ${Math.round((s.waitMs ?? 60_000) / 1000)} s: its task of ${ref} neither ran nor failed`, `read the Docker daemon's log on ${n.name} (journalctl -u docker): a pull that hangs is usually a firewall dropping the way to ${registry}`));
        continue;
      }
      const said = t.Status.Err ?? "";
      if (RAN.has(t.Status.State) || (said !== "" && !PULL_FAILED.test(said))) {
        const held = n.id === managerId && managerHeld ? " (it held that digest already, so it did not pull it again)" : "";
        out.push(ok(check, `${n.name} (${n.addr}) had ${ref} to run${held}: its task ${t.Status.State}${said ? ` (${said})` : ""}`));
        continue;
      }
      // The task says only that the image is missing: the manager's own pull says why.
      const why = await askManager();
      const where = "Docker logs why on the node only (journalctl -u docker | grep 'pulling image failed' there)";
      const more = why === null ? `; ${where}` : n.id === managerId ? `; its own pull said: ${why}` : `; ${where}; the manager's own pull of it said: ${why}`;
      out.push(fail(check, `${n.name} (${n.addr}) could not pull ${ref}: ${said || t.Status.State}${more}`, pullFix(why ?? said, registry)));
    }
  } finally {
    await engine.call("DELETE", `/services/${made.ID}`).catch(() => undefined);
  }
  return out;
}

/**
 * The newest pushed image of a service among the projects `token` may read (its digest, never a
 * signature), through the access and registries domains' services; null when the token is not
 * valid or none of its projects has an image yet.
 */
export function newestImageFor(core: Core, token: string | null): NewestImage | null {
  const principal = token === null ? null : core.access.authenticate({ bearer: token, basicPassword: null, basicUser: null, cookie: null, meta: { requestId: "doctor", ip: "", userAgent: "ops doctor" } });
  if (token !== null && !principal) return null;
  let best: NewestImage | null = null;
  for (const project of principal ? listProjects(core, principal) : allProjects(core)) {
    for (const img of projectImages(core, project)) {
      const at = img.pushed_at ?? "";
      if (!best || at > best.pushedAt) best = { repository: img.repository, digest: img.digest, pushedAt: at };
    }
  }
  return best;
}
