/**
 * The Docker runtime's engine client, pulls and one-off commands (docker.ts). Errors of reach name
 * the setting that says where the engine is. A pull is by digest only, from the
 * registry the reference names, with the credentials `registryAuth` gives (sent as the Engine
 * expects them: padded base64url JSON). A one-off (a release step) is a container that is never
 * restarted: its output followed and masked, stopped past its timeout, removed once it ended.
 */
import { followLogs, type EngineClient } from "./engine-api";
import { secretMasker } from "../../core/secret-mask";
import { exitOf, limitsText, memoryOf, oneOffBody, type ContainerInspect, type DockerLimits } from "./docker-container";
import { RuntimeError, type OneOffResult, type OneOffSpec, type OutputStream, type RuntimeImage } from "./types";

/**
 * What the engine presents to the registry: a user name and password, or a bearer token the
 * registry issued (`registrytoken`, sent as it is: ops's own pull credentials, decision 0615).
 */
export interface RegistryCredentials {
  username?: string;
  password?: string;
  registrytoken?: string;
  serveraddress: string;
}

/** Credentials the engine presents to the registry for the image `ref` (its project's, short-lived). */
export type RegistryAuth = (ref: string) => RegistryCredentials | Promise<RegistryCredentials>;

/** The `X-Registry-Auth` header for `ref`: padded base64url JSON (the Engine pulls without credentials when it is unpadded). */
export async function registryAuthHeader(registryAuth: RegistryAuth | undefined, ref: string): Promise<Record<string, string>> {
  if (!registryAuth) return {};
  return { "x-registry-auth": Buffer.from(JSON.stringify(await registryAuth(ref))).toString("base64").replace(/\+/g, "-").replace(/\//g, "_") };
}

/** `client` whose errors of reach name the setting that says where the engine is. */
export function namedEngine(client: EngineClient, setting: string): EngineClient {
  const why = (e: unknown): never => {
    const msg = (e as Error).message;
    throw /^(the Docker Engine socket|could not reach the Docker Engine)/.test(msg) ? new RuntimeError(`${msg} (${setting})`) : e;
  };
  return {
    endpoint: client.endpoint,
    call: (method, p, body, headers) => client.call(method, p, body, headers).catch(why),
    json: <T>(method: string, p: string, body?: unknown, headers?: Record<string, string>) => client.json<T>(method, p, body, headers).catch(why) as Promise<T>,
  };
}

/** Pull `image.reference` (by digest) unless the engine has it already; resolves with the reference. */
export async function pullImage(engine: EngineClient, image: RuntimeImage, registryAuth?: RegistryAuth): Promise<string> {
  const ref = image.reference;
  if (!ref) throw new RuntimeError(`image ${image.digest} has no registry reference for the Docker Engine to pull`);
  // It goes into the API's path and query: nothing but a name and a digest.
  if (!/^[A-Za-z0-9._\-/:]+@sha256:[0-9a-f]{64}$/.test(ref)) throw new RuntimeError(`not an image reference by digest: ${JSON.stringify(ref)}`);
  const here = await engine.call("GET", `/images/${ref}/json`).then(
    () => true,
    (e: Error) => {
      if (/HTTP 404/.test(e.message)) return false;
      throw e;
    },
  );
  if (here) return ref;
  const at = ref.lastIndexOf("@");
  const auth = await registryAuthHeader(registryAuth, ref);
  const res = await engine.call("POST", `/images/create?fromImage=${encodeURIComponent(ref.slice(0, at))}&tag=${encodeURIComponent(ref.slice(at + 1))}`, undefined, auth).catch((e: Error) => {
    throw new RuntimeError(`the Docker Engine could not pull ${ref}: ${e.message.replace(/^Docker Engine POST \S+: /, "")}`);
  });
  // The answer is a progress stream, 200 even when the pull fails later: its error line says so.
  for (const line of (await res.text()).split("\n")) {
    let msg: { error?: string; errorDetail?: { message?: string } };
    try {
      msg = JSON.parse(line);
    } catch {
      continue;
    }
    if (msg.error || msg.errorDetail) throw new RuntimeError(`the Docker Engine could not pull ${ref}: ${msg.errorDetail?.message ?? msg.error}`);
  }
  return ref;
}

/** Run `spec` to its end in a container of its own; its output goes to `emit` under its id. */
export async function runOneOff(
  engine: EngineClient,
  spec: OneOffSpec,
  o: { owner: string; limits: DockerLimits; graceMs: number; pull: (image: RuntimeImage) => Promise<string>; emit: (id: string, stream: OutputStream, line: string) => void },
): Promise<OneOffResult> {
  const ref = await o.pull(spec.image);
  const containerId = (await engine.json<{ Id: string }>("POST", "/containers/create", oneOffBody(spec, ref, o))).Id;
  const mask = secretMasker([...(spec.masked ?? [])]);
  const tail: string[] = [];
  const logs = new AbortController();
  let timedOut = false;
  o.emit(spec.id, "ops", limitsText(o.limits, memoryOf(spec, o.limits), null));
  try {
    await engine.call("POST", `/containers/${containerId}/start`);
    const lines = engine
      .call("GET", `/containers/${containerId}/logs?follow=1&stdout=1&stderr=1`)
      .then((res) =>
        followLogs(res, logs.signal, (stream, raw) => {
          const line = mask(raw);
          tail.push(line);
          if (tail.length > 20) tail.shift();
          o.emit(spec.id, stream, line);
        }),
      )
      .catch(() => undefined);
    const timer = setTimeout(() => {
      timedOut = true;
      void engine.call("POST", `/containers/${containerId}/stop?t=${Math.ceil(o.graceMs / 1000)}`).catch(() => undefined);
    }, spec.timeoutMs);
    const waited = await engine.json<{ StatusCode: number }>("POST", `/containers/${containerId}/wait`).finally(() => clearTimeout(timer));
    const info = await engine.json<ContainerInspect>("GET", `/containers/${containerId}/json`);
    await Promise.race([lines, Bun.sleep(2000)]);
    const exit = exitOf(waited.StatusCode, info.State.OOMKilled, Date.now());
    return { code: exit.code, signal: exit.signal, oomKilled: exit.oomKilled, timedOut, tail };
  } finally {
    logs.abort();
    await engine.call("DELETE", `/containers/${containerId}?force=1`).catch(() => undefined);
  }
}
