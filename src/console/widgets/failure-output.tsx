/**
 * What a failed rollout's processes printed last (the deployment's `failure_output`): shown where
 * the failure is (the build page, the service page, the timeline), each process's lines as they
 * came, with a link to the service's full logs.
 */
import { Link, Shown } from "../ui";

export interface FailedProcess {
  process: string;
  lines: string[];
}

export function FailureOutput(props: { output: FailedProcess[] | undefined | null; logs: string }) {
  if (!props.output || props.output.length === 0) return null;
  return (
    <div class="failure-output">
      {props.output.map((p) => (
        <figure key={p.process}>
          <figcaption>
            What <code>{p.process}</code> printed last ({p.lines.length} line{p.lines.length === 1 ? "" : "s"})
          </figcaption>
          <pre aria-label={`The last lines of ${p.process}`}>
            <Shown text={p.lines.join("\n")} />
          </pre>
        </figure>
      ))}
      <p class="hint">
        <Link href={props.logs}>All its lines in Logs</Link>
      </p>
    </div>
  );
}
