/**
 * Text that came from a project or a visitor (an app's log line, a commit subject, a server's
 * message echoing input) on its way to someone's terminal. Control characters can repaint the
 * screen, move the cursor over what ops printed, set the window title or write the clipboard
 * (OSC 52); line separators and bidirectional overrides can reorder what is read. journalctl
 * shows such lines escaped rather than raw; ops does the same.
 */

/** C0 and C1 controls and DEL, Unicode line separators and bidirectional marks and overrides. */
export const TERMINAL_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Every unsafe character except newlines and tabs written as `\uXXXX` (visible, and a valid JSON escape). */
export function escapeForTerminal(text: string): string {
  return text.replace(TERMINAL_UNSAFE, (c) => (c === "\n" || c === "\t" ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}
