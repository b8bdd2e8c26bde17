/**
 * The ingress's own answers, as small HTML pages a person reading them in a browser understands:
 * 404 for a host no service answers, 502 naming the service when none of its replicas answered,
 * 4xx for a request the ingress could not read. Each is a whole HTTP/1.1 response, ready to write.
 */
import type { ServiceRef } from "./table";

export interface Page {
  status: number;
  title: string;
  html: string;
  /** A `text/plain` body instead of HTML (an ACME key authorization). */
  text?: boolean;
  /** A `Location` field (a redirect). */
  location?: string;
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

function page(status: number, title: string, body: string): Page {
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>${status} ${escape(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}` +
    `h1{font-size:1.4rem}code{background:#f2f2f2;padding:0 .25rem;border-radius:3px}footer{margin-top:2rem;color:#777;font-size:.85rem}</style></head>` +
    `<body><h1>${status} ${escape(title)}</h1>${body}<footer>ops ingress</footer></body></html>`;
  return { status, title, html };
}

/** The page as an HTTP/1.1 response; `close` adds `Connection: close`, `headOnly` leaves the body out (HEAD). */
export function pageBytes(p: Page, close: boolean, headOnly: boolean): Buffer {
  const body = Buffer.from(p.html);
  const head =
    `HTTP/1.1 ${p.status} ${p.title}\r\ncontent-type: ${p.text ? "text/plain" : "text/html; charset=utf-8"}\r\ncache-control: no-store\r\n${p.location ? `location: ${p.location}\r\n` : ""}` +
    `date: ${new Date().toUTCString()}\r\ncontent-length: ${body.length}\r\n${close ? "connection: close\r\n" : ""}\r\n`;
  return headOnly ? Buffer.from(head, "latin1") : Buffer.concat([Buffer.from(head, "latin1"), body]);
}

/** 400, 405, 408, 431, 501, 503: a request the ingress could not read, will not relay, or has no room for. */
export function badRequestPage(status: number, reason: string): Page {
  const titles: Record<number, string> = { 400: "Bad Request", 405: "Method Not Allowed", 408: "Request Timeout", 431: "Request Header Fields Too Large", 501: "Not Implemented", 503: "Service Unavailable" };
  const title = titles[status] ?? "Bad Request";
  return page(status, title, `<p>The ingress could not relay this request: ${escape(reason)}.</p>`);
}

/** 404: no service is routed for this host (and path). */
export function notRoutedPage(host: string, path: string): Page {
  return page(
    404,
    "Not Found",
    host
      ? `<p>No service answers <code>${escape(host)}${escape(path === "/" ? "" : path)}</code> on this server.</p><p>Check the domain's hosts and path prefix, or use <code>&lt;service&gt;.&lt;environment&gt;.&lt;project&gt;.localhost</code>.</p>`
      : `<p>The request named no host.</p>`,
  );
}

/** 502: the service is routed here but none of its replicas answered. */
export function badGatewayPage(s: ServiceRef, reason: string): Page {
  return page(
    502,
    "Bad Gateway",
    `<p>The service <strong>${escape(s.service)}</strong> (environment <code>${escape(s.environment)}</code> of project <code>${escape(s.project)}</code>) has no replica answering right now.</p>` +
      `<p>${escape(reason)}</p><p>If a deployment is under way, try again in a moment.</p>`,
  );
}
