/**
 * Release notes are written by whoever pushes a tag: no spelling of a `javascript:` (or `data:`,
 * `vbscript:`) link may come out of the renderer as a live link, and what the browser will follow
 * is exactly the URL that was checked.
 */
import { describe, expect, test } from "bun:test";
import { decodeHTMLAttribute } from "entities/decode";
import { renderMarkdown, safeHref } from "./markdown";

/** Every href in the HTML, as the browser reads it (HTMLRewriter gives the raw text; one round of attribute decoding). */
async function hrefs(html: string): Promise<string[]> {
  const out: string[] = [];
  await new HTMLRewriter()
    .on("a", { element: (el) => void out.push(decodeHTMLAttribute(el.getAttribute("href") ?? "")) })
    .transform(new Response(html))
    .text();
  return out;
}

describe("release-notes links", () => {
  const hostile = [
    "[x](javascript&#58;alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](javascript&colon;alert(1))",
    "[x](javascript&#x3A;alert(1))",
    "[x](javascript&#0000058alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](<java\nscript:alert(1)>)",
    "[x]( javascript:alert(1))",
    "[x](&#x20;javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox(1))",
    "[x](//evil.example/phish)",
    "[x](\\\\evil.example/phish)",
    "![x](javascript&#58;alert(1))",
    "[x][ref]\n\n[ref]: javascript&#58;alert(1)",
    "<javascript:alert(1)>",
  ];

  for (const source of hostile) {
    test(`no live link for ${JSON.stringify(source)}`, async () => {
      const html = renderMarkdown(source);
      for (const h of await hrefs(html)) {
        const lower = h.toLowerCase().replace(/[\t\n\r]/g, "").trim();
        expect([source, lower]).not.toEqual([source, expect.stringMatching(/^(javascript|data|vbscript):/)]);
        expect([source, lower.startsWith("//") || lower.startsWith("\\\\")]).toEqual([source, false]);
      }
    });
  }

  test("http, https, mailto and relative links stay links, exactly as written", async () => {
    const html = renderMarkdown("[a](https://example.com/a?b=1&c=2) [b](http://example.com) [c](mailto:dev@example.com) [d](../docs/x.md#y) [e](/abs)");
    expect(await hrefs(html)).toEqual(["https://example.com/a?b=1&c=2", "http://example.com", "mailto:dev@example.com", "../docs/x.md#y", "/abs"]);
  });

  test("an encoded https link is followed where it says", () => {
    expect(safeHref("https&#58;//example.com")).toBe("https://example.com");
    expect(safeHref("javascript&colon;alert(1)")).toBeNull();
    expect(safeHref("foo:bar")).toBeNull();
  });
});
