/**
 * Release notes are Markdown written by whoever pushes the tag: rendered with `marked`, but raw
 * HTML in the source is shown as text (escaped), links keep only http(s), mailto and relative
 * targets, checked after character references are decoded (a `javascript:` link, however it is
 * spelled, becomes its text), and images become links, so nothing in a
 * changelog can run or load anything in the console (whose CSP forbids inline scripts anyway).
 * Headings move below the version's own heading (`#` → h5, deeper → h6).
 */
import { Marked, type Tokens } from "marked";
import { decodeHTMLAttribute } from "entities/decode";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/**
 * The URL a browser would follow for `href` as written in Markdown, or null when it is not an
 * http(s), mailto or relative link. Decided on what the browser will see: character references
 * decoded as in an attribute (`javascript&#58;`, `&#106;avascript:`, `javascript&colon;`), tabs
 * and newlines removed anywhere and control characters and spaces at both ends, as the URL parser
 * does. The caller writes exactly this string back, escaped, so nothing is decoded twice.
 */
export function safeHref(href: string): string | null {
  const url = decodeHTMLAttribute(href)
    .replace(/[\t\n\r]/g, "")
    .replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "");
  const h = url.toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(h)?.[1];
  if (scheme !== undefined) return scheme === "http" || scheme === "https" || scheme === "mailto" ? url : null;
  // No scheme: relative, unless it is protocol-relative (`//host`, `\\host`) or smuggles a colon
  // before its first slash, which some parsers read as a scheme.
  if (/^[\\/]{2}/.test(url) || /^[^/?#]*:/.test(url)) return null;
  return url;
}

function titleAttr(title: string | null | undefined): string {
  return title ? ` title="${escapeHtml(decodeHTMLAttribute(title))}"` : "";
}

const md = new Marked({
  gfm: true,
  async: false,
  renderer: {
    // A note sits under its version's h4: its own headings come below that.
    heading(token: Tokens.Heading) {
      const level = Math.min(6, token.depth + 4);
      return `<h${level}>${this.parser.parseInline(token.tokens)}</h${level}>\n`;
    },
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(token.text);
    },
    link(token: Tokens.Link) {
      const inner = this.parser.parseInline(token.tokens);
      const href = safeHref(token.href);
      return href === null ? inner : `<a href="${escapeHtml(href)}"${titleAttr(token.title)} rel="noopener noreferrer nofollow">${inner}</a>`;
    },
    image(token: Tokens.Image) {
      const text = escapeHtml(token.text || token.href);
      const href = safeHref(token.href);
      return href === null ? text : `<a href="${escapeHtml(href)}" rel="noopener noreferrer nofollow">${text}</a>`;
    },
  },
});

/** Safe HTML for a Markdown text (see the file comment). */
export function renderMarkdown(source: string): string {
  return md.parse(source) as string;
}
