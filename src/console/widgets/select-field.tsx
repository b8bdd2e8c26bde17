/**
 * A label and its select, the way every form of the console offers a choice: each option a value
 * and the text shown for it, or a plain string shown as itself. The caller places the pair (a grid
 * cell, a toolbar) and keeps the value.
 */

export type Choice = string | readonly [value: string, text: string];

export function SelectField(props: { id: string; label: string; value: string; options: ReadonlyArray<Choice>; onChange(value: string): void; required?: boolean }) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} required={props.required} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {text}
            </option>
          );
        })}
      </select>
    </>
  );
}
