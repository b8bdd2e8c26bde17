/**
 * The device domain module: device login routes, the poll's own error format, and the
 * `device.expire-grants` task.
 * Decisions: docs/decisions/0403-device-login-cli-status.md.
 */
import type { DomainModule } from "../../core/core";
import type { NormalisedError } from "../../core/errors";
import { deviceRoutes } from "./routes";
import { expireDeviceGrants } from "./jobs";

/** The poll answers RFC 8628 errors only: anything refused there becomes a DeviceErrorResponse. */
function renderPollError(err: NormalisedError): Response {
  const server = err.status >= 500;
  const body = server
    ? { error: "server_error", error_description: "The server could not answer; try again shortly." }
    : { error: "expired_token", error_description: "The request carries no valid device code; start the login again." };
  return new Response(JSON.stringify(body), {
    status: server ? err.status : 400,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...err.headers },
  });
}

export const deviceModule: DomainModule = {
  name: "device",
  install(core) {
    core.scheduler.defineTask("device.expire-grants", "* * * * *", () => {
      expireDeviceGrants(core);
    });
  },
  routes: deviceRoutes,
  errorStyles: () => [{ prefix: "/api/v1/auth/device/token", render: renderPollError }],
};
