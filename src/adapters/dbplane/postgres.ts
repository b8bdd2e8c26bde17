/**
 * The PostgreSQL database plane (`OPS_DB_PLANE_URL`), through Bun's built-in PostgreSQL client
 * (`Bun.SQL`). ops connects as the plane's administrator, creates one database and one login role
 * per database resource, changes role passwords and reads size and connection figures.
 *
 * Passwords never travel to the plane in clear: ops computes the SCRAM-SHA-256 verifier itself
 * and sends that (as `psql`'s \password does), so a plane that logs statements logs no password.
 * Identifiers are checked against a strict pattern and then quoted; DDL takes no bind parameters.
 */
import { SQL } from "bun";
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

export class PlaneError extends Error {
  constructor(
    message: string,
    /** `unreachable`: no connection; `refused`: the plane answered with an error. */
    readonly kind: "unreachable" | "refused",
  ) {
    super(message);
    this.name = "PlaneError";
  }
}

function ident(name: string): string {
  if (!IDENT.test(name)) throw new PlaneError(`not a plane identifier: ${name}`, "refused");
  return `"${name}"`;
}

/** SCRAM-SHA-256 verifier of `password` in PostgreSQL's stored form. */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize("NFKC"), salt, iterations, 32, "sha256");
  const clientKey = createHmac("sha256", salted).update("Client Key").digest();
  const storedKey = createHash("sha256").update(clientKey).digest();
  const serverKey = createHmac("sha256", salted).update("Server Key").digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`;
}

/** True when `verifier` (PostgreSQL's stored SCRAM form) was made from `password`. */
export function scramMatches(verifier: string, password: string): boolean {
  const m = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  if (!m) return false;
  return scramVerifier(password, Buffer.from(m[2], "base64"), Number(m[1])) === verifier;
}

/** A random password that needs no escaping in a URL or a shell. */
export function newPlanePassword(): string {
  return randomBytes(32).toString("base64url");
}

export interface PlaneStats {
  sizeBytes: number;
  connections: number;
  serverVersion: string;
}

export class PostgresPlane {
  private readonly url: URL;

  constructor(
    planeUrl: string,
    private readonly connectTimeoutSecs = 5,
  ) {
    this.url = new URL(planeUrl);
  }

  /** Host, port and the query the plane URL carries (sslmode …), for connection strings. */
  connectionString(database: string, role: string, password: string): string {
    const u = new URL(this.url.toString());
    u.username = role;
    u.password = password;
    u.pathname = `/${database}`;
    for (const k of [...u.searchParams.keys()]) if (k !== "sslmode") u.searchParams.delete(k);
    return u.toString();
  }

  /** host:port of the plane, for runbooks (no credentials). */
  get address(): { host: string; port: number } {
    return { host: this.url.hostname, port: Number(this.url.port || 5432) };
  }

  private async withClient<T>(fn: (sql: SQL) => Promise<T>): Promise<T> {
    const sql = new SQL(this.url.toString(), { max: 1, connectionTimeout: this.connectTimeoutSecs, idleTimeout: 5 });
    try {
      try {
        await sql`select 1`;
      } catch (e) {
        throw new PlaneError(`the database plane did not answer (${(e as Error).message.replace(/\/\/[^@/]*@/g, "//***@")})`, "unreachable");
      }
      try {
        return await fn(sql);
      } catch (e) {
        if (e instanceof PlaneError) throw e;
        throw new PlaneError((e as Error).message, "refused");
      }
    } finally {
      await sql.close({ timeout: 1 }).catch(() => {});
    }
  }

  /** Create a login role with `verifier` and a database it owns, reachable only by it. */
  async provision(database: string, role: string, verifier: string, connectionLimit: number): Promise<void> {
    await this.withClient(async (sql) => {
      await sql.unsafe(`CREATE ROLE ${ident(role)} LOGIN PASSWORD '${verifier.replace(/'/g, "''")}' CONNECTION LIMIT ${Math.trunc(connectionLimit)}`);
      try {
        await sql.unsafe(`CREATE DATABASE ${ident(database)} OWNER ${ident(role)} CONNECTION LIMIT ${Math.trunc(connectionLimit)}`);
        await sql.unsafe(`REVOKE ALL ON DATABASE ${ident(database)} FROM PUBLIC`);
        await sql.unsafe(`GRANT ALL ON DATABASE ${ident(database)} TO ${ident(role)}`);
      } catch (e) {
        await sql.unsafe(`DROP DATABASE IF EXISTS ${ident(database)} WITH (FORCE)`).catch(() => {});
        await sql.unsafe(`DROP ROLE IF EXISTS ${ident(role)}`).catch(() => {});
        throw e;
      }
    });
  }

  /** Drop the database (closing its connections) and its role. */
  async drop(database: string, role: string): Promise<void> {
    await this.withClient(async (sql) => {
      await sql.unsafe(`DROP DATABASE IF EXISTS ${ident(database)} WITH (FORCE)`);
      await sql.unsafe(`DROP ROLE IF EXISTS ${ident(role)}`);
    });
  }

  /** Give `role` a new password (as a verifier). */
  async setPassword(role: string, verifier: string): Promise<void> {
    await this.withClient(async (sql) => {
      const exists = await sql`select 1 from pg_roles where rolname = ${role}`;
      if (exists.length === 0) throw new PlaneError(`role ${role} does not exist on the plane`, "refused");
      await sql.unsafe(`ALTER ROLE ${ident(role)} PASSWORD '${verifier.replace(/'/g, "''")}'`);
    });
  }

  async setConnectionLimit(database: string, role: string, limit: number): Promise<void> {
    await this.withClient(async (sql) => {
      await sql.unsafe(`ALTER DATABASE ${ident(database)} CONNECTION LIMIT ${Math.trunc(limit)}`);
      await sql.unsafe(`ALTER ROLE ${ident(role)} CONNECTION LIMIT ${Math.trunc(limit)}`);
    });
  }

  /** Size and connections of `database`, or null when it does not exist. */
  async stats(database: string): Promise<PlaneStats | null> {
    return this.withClient(async (sql) => {
      const rows = await sql`select pg_database_size(datname)::bigint as size, (select count(*) from pg_stat_activity a where a.datname = d.datname)::int as conns, current_setting('server_version') as version from pg_database d where datname = ${database}`;
      if (rows.length === 0) return null;
      return { sizeBytes: Number(rows[0].size), connections: Number(rows[0].conns), serverVersion: String(rows[0].version) };
    });
  }
}
