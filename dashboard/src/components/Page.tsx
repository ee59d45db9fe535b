import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import type { ProblemDetails } from '../api/session';

/** A page's one <h1>, also the document title, and its content. */
export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Gatehouse`;
  }, [title]);
  return (
    <>
      <h1>{title}</h1>
      {children}
    </>
  );
}

/** Shown instead of a page whose read permission the user lacks. */
export function NoAccess({ what }: { what: string }) {
  return (
    <p class="note" role="note">
      You do not have access to {what}. Ask an administrator for a role that allows it.
    </p>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="loading" role="status" aria-busy="true">
      {label}
    </p>
  );
}

/** The server's problem as the user should read it: its detail, and each field error. */
export function ProblemNote({ problem }: { problem: ProblemDetails | null }) {
  if (!problem) return null;
  const detail = problem.detail || problem.title;
  // A single field error is usually the detail itself; list only what the detail does not already say.
  const errors = (problem.errors ?? []).filter((error) => error.message !== detail);
  return (
    <div class="problem" role="alert">
      <p>{detail}</p>
      {errors.length > 0 && (
        <ul>
          {errors.map((error) => (
            <li key={error.field + error.message}>
              <code>{error.field}</code>: {error.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** A date-time the way this browser writes it; `fallback` when there is none. */
export function When({ at, fallback = '—' }: { at: string | null | undefined; fallback?: string }) {
  if (!at) return <>{fallback}</>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/** An audit entry's details as one line of `name: value` pairs. */
export function Details({ details }: { details: Record<string, unknown> }) {
  const entries = Object.entries(details);
  if (!entries.length) return <>—</>;
  return (
    <code class="details">
      {entries
        .map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
        .join('; ')}
    </code>
  );
}
