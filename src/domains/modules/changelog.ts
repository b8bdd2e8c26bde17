/**
 * Release notes from a module's `CHANGELOG.md`: one section per `## <version>` heading (the
 * forms Keep a Changelog and most release tools write: `## 1.2.0`, `## v1.2.0`,
 * `## [1.2.0] - 2026-05-01`, `## 1.2.0 (2026-05-01)`). A heading whose first word is not a
 * version (`## Unreleased`) starts a section that is not kept. The section is the Markdown
 * between its heading and the next `## ` heading (or a `#` heading), trimmed.
 */

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** True for a SemVer 2.0 version (no `v`). */
export function isSemver(v: string): boolean {
  return v.length <= 256 && SEMVER.test(v);
}

export interface NotesSection {
  version: string;
  notes: string;
}

/** The version a `## …` heading names, or null. */
function headingVersion(heading: string): string | null {
  const first = heading.trim().split(/\s+/)[0] ?? "";
  const bare = first.replace(/^\[/, "").replace(/\]$/, "").replace(/^v(?=\d)/, "");
  return isSemver(bare) ? bare : null;
}

/** Every versioned section of a changelog, in file order (the first of a repeated version wins). */
export function parseChangelog(text: string): NotesSection[] {
  const out: NotesSection[] = [];
  const seen = new Set<string>();
  let current: { version: string | null; lines: string[] } | null = null;
  let fence: string | null = null;
  const close = () => {
    if (current?.version && !seen.has(current.version)) {
      seen.add(current.version);
      out.push({ version: current.version, notes: current.lines.join("\n").trim() });
    }
  };
  for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
    // Headings inside fenced code blocks are text.
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (f) fence = fence === null ? f[1][0] : f[1][0] === fence ? null : fence;
    if (fence === null && /^#{1,2}\s/.test(line) && !/^```/.test(line)) {
      close();
      current = line.startsWith("## ") ? { version: headingVersion(line.slice(3)), lines: [] } : null;
      continue;
    }
    current?.lines.push(line);
  }
  close();
  return out;
}
