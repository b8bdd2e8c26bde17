/**
 * The Swarm objects a replica needs besides its service (swarm.ts): its project's environment's
 * overlay network, made on first use and found again by its label; a published port no other
 * replica on the swarm holds; and the Swarm secret that carries its secret values, removed with it.
 * Everything is labelled with the ops instance that made it, so two ops on one swarm never share a
 * network or remove each other's secrets.
 */
import { randomInt } from "node:crypto";
import type { EngineClient } from "./engine-api";
import { L, networkOf, secretNameOf } from "./swarm-spec";
import { RuntimeError } from "./types";

export interface SwarmObjects {
  /** The id of the overlay network of `labels`' project and environment. */
  networkFor(labels: Record<string, string>): Promise<string>;
  /** A port of the range that no service on the swarm publishes on; `release` it once its service exists (or failed). */
  allocatePort(inUse: Iterable<number>): Promise<number>;
  release(port: number): void;
  /** A Swarm secret holding `text` (null: none needed). */
  makeSecret(replicaId: string, kind: string, text: string | null): Promise<{ id: string; name: string } | null>;
  /** Remove a secret, retried while a task still holds it. */
  removeSecret(secretId: string | null): Promise<void>;
  /** This instance's secrets that no service of it uses any more (an ops that died between the two removals). */
  sweepSecrets(): Promise<number>;
}

export const filterOf = (f: Record<string, string[]>) => encodeURIComponent(JSON.stringify(f));

export function swarmObjects(engine: EngineClient, instance: string, ports: { first: number; last: number }): SwarmObjects {
  const networks = new Map<string, Promise<string>>();
  const reserved = new Set<number>();

  return {
    networkFor(labels) {
      const net = networkOf(labels, instance);
      let p = networks.get(net.key);
      if (!p) {
        p = (async () => {
          const found = await engine.json<Array<{ Id: string }>>("GET", `/networks?filters=${filterOf({ label: [`${L.network}=${net.key}`, `${L.instance}=${instance}`] })}`);
          if (found[0]) return found[0].Id;
          // The name filter matches by prefix: compare whole names.
          const taken = await engine.json<Array<{ Name: string }>>("GET", `/networks?filters=${filterOf({ name: [net.name] })}`);
          const name = taken.some((n) => n.Name === net.name) ? net.fallback : net.name;
          const made = await engine.json<{ Id: string }>("POST", "/networks/create", { Name: name, Driver: "overlay", Attachable: false, CheckDuplicate: true, Labels: { [L.network]: net.key, [L.instance]: instance } });
          return made.Id;
        })();
        networks.set(net.key, p);
        p.catch(() => networks.delete(net.key));
      }
      return p;
    },

    async allocatePort(inUse) {
      const services = await engine.json<Array<{ Spec: { Labels?: Record<string, string> } }>>("GET", `/services?filters=${filterOf({ label: [L.port] })}`);
      const used = new Set<number>([...reserved, ...inUse]);
      for (const s of services) used.add(Number(s.Spec.Labels?.[L.port]));
      const size = ports.last - ports.first + 1;
      const from = randomInt(size);
      for (let k = 0; k < size; k++) {
        const port = ports.first + ((from + k) % size);
        if (!used.has(port)) {
          reserved.add(port);
          return port;
        }
      }
      throw new RuntimeError(`every port of ${ports.first}-${ports.last} (OPS_SWARM_PORTS) is taken by a replica`);
    },

    release(port) {
      reserved.delete(port);
    },

    async makeSecret(replicaId, kind, text) {
      if (text === null) return null;
      const name = secretNameOf(replicaId);
      const made = await engine.json<{ ID: string }>("POST", "/secrets/create", { Name: name, Data: Buffer.from(text).toString("base64"), Labels: { [L.instance]: instance, [L.kind]: kind, [L.replica]: replicaId } });
      return { id: made.ID, name };
    },

    async removeSecret(secretId) {
      if (!secretId) return;
      for (let k = 0; k < 20; k++) {
        if (await engine.call("DELETE", `/secrets/${secretId}`).then(() => true, (e: Error) => /404|not found/i.test(e.message))) return;
        await Bun.sleep(500);
      }
    },

    async sweepSecrets() {
      const [secrets, services] = await Promise.all([
        engine.json<Array<{ ID: string }>>("GET", `/secrets?filters=${filterOf({ label: [`${L.instance}=${instance}`] })}`),
        engine.json<Array<{ Spec: { TaskTemplate: { ContainerSpec?: { Secrets?: Array<{ SecretID: string }> } } } }>>("GET", "/services"),
      ]);
      const held = new Set(services.flatMap((s) => (s.Spec.TaskTemplate.ContainerSpec?.Secrets ?? []).map((x) => x.SecretID)));
      const stale = secrets.filter((s) => !held.has(s.ID));
      for (const s of stale) await engine.call("DELETE", `/secrets/${s.ID}`).catch(() => undefined);
      return stale.length;
    },
  };
}
