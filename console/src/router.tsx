import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** The app's pages live under /console; the API answers index.html for all of them. */
export const BASE = '/console';

const NAVIGATED = 'ptr-navigated';

/** Goes to `to` (a path under /console) without reloading. */
export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event(NAVIGATED));
  window.scrollTo(0, 0);
}

/** The address as the app routes it: the path below /console, and the query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const read = () => ({ path: location.pathname.slice(BASE.length).replace(/\/+$/, '') || '/', search: location.search });
  const [where, setWhere] = useState(read);
  useEffect(() => {
    const update = () => setWhere(read());
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
    };
  }, []);
  return { path: where.path, query: new URLSearchParams(where.search) };
}

/** A link inside the app: a plain `<a href>` (keyboard, middle click and copy work), followed without a reload. */
export function Link(props: { to: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' }) {
  const href = `${BASE}${props.to}`;
  return (
    <a
      href={href}
      class={props.class}
      aria-current={props['aria-current']}
      onClick={(event) => {
        if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(href);
      }}
    >
      {props.children}
    </a>
  );
}

/** `/tasks/:profile/:task` against a path: its parameters (decoded), or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const have = path.split('/');
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of want.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(have[i]!);
    else if (part !== have[i]) return undefined;
  }
  return params;
}

/** One path segment, encoded. */
export const seg = (value: string) => encodeURIComponent(value);
