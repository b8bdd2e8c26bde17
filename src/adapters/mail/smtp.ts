/**
 * Outgoing mail over SMTP with nodemailer (a well-kept client that speaks STARTTLS, implicit
 * TLS and AUTH from one `smtp://` / `smtps://` URL). One pooled transport per Core.
 */
import type { Transporter } from "nodemailer";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(msg: MailMessage): Promise<void>;
  close(): void;
}

/** A mailer for `url` (`smtp://user:pass@host:port`, `smtps://…`) sending as `from`. */
export function smtpMailer(url: string, from: string): Mailer {
  // nodemailer loads with the first message, not at start: most servers send none for hours, and
  // loading it costs start-up time and memory held for good (decision 0640).
  let transport: Promise<Transporter> | null = null;
  return {
    async send(msg) {
      transport ??= import("nodemailer").then(({ default: nodemailer }) => nodemailer.createTransport(url, { from }));
      const t = await transport;
      await t.sendMail({ from, to: msg.to, subject: msg.subject, text: msg.text });
    },
    close() {
      void transport?.then((t) => t.close());
    },
  };
}
