/**
 * The certificates domain's public surface: ops's own listener (src/serve.ts) asks to be given
 * its certificate (OPS_TLS=acme) whenever it is issued or renewed.
 */
export { setOwnCertificateSink, ownHost, type OwnCertificateSink } from "./store";
