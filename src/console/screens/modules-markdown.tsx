/**
 * Release notes are Markdown written by whoever pushes the tag: rendered with `marked`, but raw
 * HTML in the source is shown as text (escaped), links keep only http(s), mailto and relative
 * targets (a `javascript:` link becomes its text), and images become links, so nothing in a
 * changelog can run or load anything in the console (whose CSP forbids inline scripts anyway).
 * Headings move below the version's own heading (`#` → h5, deeper → h6).
 */
import { Marked, type Tokens } from "marked";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function safeHref(href: string): boolean {
  const h = href.trim().toLowerCase();
  return /^(https?:|mailto:)/.test(h) || (!/^[a-z][a-z0-9+.-]*:/.test(h) && !h.startsWith("//"));
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
      if (safeHref(token.href)) return false;
      return escapeHtml(token.text);
    },
    image(token: Tokens.Image) {
      const text = escapeHtml(token.text || token.href);
      return safeHref(token.href) ? `<a href="${escapeHtml(token.href)}" rel="noopener noreferrer nofollow">${text}</a>` : text;
    },
  },
});

/** Safe HTML for a Markdown text (see the file comment). */
export function renderMarkdown(source: string): string {
  return md.parse(source) as string;
}
