/**
 * Outgoing mail over SMTP with nodemailer (a well-kept client that speaks STARTTLS, implicit
 * TLS and AUTH from one `smtp://` / `smtps://` URL). One pooled transport per Core.
 */
import nodemailer from "nodemailer";

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
  const transport = nodemailer.createTransport(url, { from });
  return {
    async send(msg) {
      await transport.sendMail({ from, to: msg.to, subject: msg.subject, text: msg.text });
    },
    close() {
      transport.close();
    },
  };
}
