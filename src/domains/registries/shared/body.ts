/**
 * Raw request bodies on the registry routes the kernel leaves unparsed (`raw` body limits); the
 * reading itself is the kernel's (src/core/body.ts).
 */
export { bodyTooLarge, readBodyWithLimit } from "../../../core/body";

/** A parse hook that claims the body without reading it, so Elysia's fallback parsers leave the stream alone. */
export const RAW_BODY = Symbol("raw body");
export const rawParse = () => RAW_BODY;
