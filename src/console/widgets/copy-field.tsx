import { useState } from "preact/hooks";

/** A read-only value (a URL, a command line) with a button that copies it. */
export function CopyField(props: { label: string; value: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  async function copy() {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied("Copied.");
    } catch {
      setCopied("Select the URL and copy it.");
    }
  }
  return (
    <span class="copy-field">
      <input readOnly value={props.value} aria-label={props.label} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button type="button" class="small" onClick={() => void copy()}>
        Copy
      </button>
      <span role="status" class="muted">
        {copied}
      </span>
    </span>
  );
}

