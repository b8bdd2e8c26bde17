/** Files imported as text (`import x from "./f.tmpl" with { type: "text" }`); `bun build --compile` embeds them. */
declare module "*.tmpl" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*.md" {
  const text: string;
  export default text;
}
/** Scalar's standalone viewer, imported as a file (`with { type: "file" }`): its path, embedded by `bun build --compile`. */
declare module "*/standalone.js" {
  const file: string;
  export default file;
}
