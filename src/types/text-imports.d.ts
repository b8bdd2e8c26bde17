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
