/** The environment switch of project pages: links that set the page's `environment` query parameter. */
/** Links that switch the `environment` query parameter of the current page. */
export function EnvironmentPicker(props: { environments: string[]; current: string }) {
  if (props.environments.length < 2) return null;
  return (
    <nav class="env-picker" aria-label="Environment">
      {props.environments.map((e) => (
        <a key={e} href={`?environment=${encodeURIComponent(e)}`} aria-current={e === props.current ? "page" : undefined} onClick={(ev) => {
          ev.preventDefault();
          const q = new URLSearchParams(location.search);
          q.set("environment", e);
          history.pushState(null, "", `${location.pathname}?${q}`);
          dispatchEvent(new PopStateEvent("popstate"));
        }}>
          {e}
        </a>
      ))}
    </nav>
  );
}
