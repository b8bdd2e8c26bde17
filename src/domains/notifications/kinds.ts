/** The notification kinds: the spec's seven and `certificate.failing` (decision 0344), with the labels settings show. */
export const NOTIFICATION_KINDS = [
  { kind: "build.failed", label: "A build failed" },
  { kind: "deployment.rolled", label: "A deployment rolled out" },
  { kind: "deployment.refused", label: "A deployment was refused" },
  { kind: "deployment.auto_rollback", label: "A deployment was rolled back automatically" },
  { kind: "probe.down", label: "A health probe is failing" },
  { kind: "quota.high", label: "A quota is nearly used up" },
  { kind: "package.published", label: "A package was published" },
  // Decision 0344: an eighth kind beside the spec's seven, asked for by the HTTPS issue.
  { kind: "certificate.failing", label: "A certificate could not be issued or renewed" },
] as const;

/**
 * Kinds about the estate rather than a project (docs/decisions/0384): they go to the people who
 * manage the estate, in-app and by email when OPS_SMTP_URL is set, and have no project settings.
 */
export const ESTATE_NOTIFICATION_KINDS = [{ kind: "backup.failing", label: "Backups are failing" }] as const;

export type EstateNotificationKind = (typeof ESTATE_NOTIFICATION_KINDS)[number]["kind"];

export type NotificationKind = (typeof NOTIFICATION_KINDS)[number]["kind"];

const KINDS: ReadonlySet<string> = new Set(NOTIFICATION_KINDS.map((k) => k.kind));

export function isNotificationKind(s: string): s is NotificationKind {
  return KINDS.has(s);
}

export function labelOf(kind: string): string {
  return [...NOTIFICATION_KINDS, ...ESTATE_NOTIFICATION_KINDS].find((k) => k.kind === kind)?.label ?? kind;
}

/** Channel defaults when a member has not chosen: in-app on, email off. */
export const DEFAULT_CHANNELS = { inApp: true, email: false } as const;
