/**
 * What each kind of channel is sent. One message (what the event says) becomes:
 * - webhook: the message as JSON, as is;
 * - Slack incoming webhook: `{ text, blocks }` (a section in mrkdwn and a context line);
 * - Discord webhook: `{ content, embeds: [{ title, description, color, url, timestamp }] }`.
 */
export interface AlertMessage {
  /** `alert.firing`, `alert.resolved`, `alert.test`, or a notification kind. */
  event: string;
  project: string;
  title: string;
  text: string;
  /** An absolute console URL, or null. */
  url: string | null;
  at: string;
  rule?: { id: string; name: string; value: number | null; threshold: number; op: string } | null;
  params?: Record<string, string | number | boolean>;
}

const RED = 0xd73a49;
const GREEN = 0x28a745;
const GREY = 0x6a737d;

export function formatFor(kind: string, m: AlertMessage): unknown {
  if (kind === "slack") {
    const context = `project *${m.project}*${m.url ? ` · <${m.url}|open in ops>` : ""}`;
    return {
      text: `${m.title}: ${m.text}`,
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: `*${m.title}*\n${m.text}` } },
        { type: "context", elements: [{ type: "mrkdwn", text: context }] },
      ],
    };
  }
  if (kind === "discord") {
    const color = m.event === "alert.firing" ? RED : m.event === "alert.resolved" ? GREEN : GREY;
    return {
      content: `${m.title} (${m.project})`,
      embeds: [{ title: m.title.slice(0, 256), description: m.text.slice(0, 4000), color, ...(m.url ? { url: m.url } : {}), timestamp: m.at }],
    };
  }
  return { type: m.event, project: m.project, title: m.title, text: m.text, url: m.url, at: m.at, rule: m.rule ?? null, params: m.params ?? null };
}
