import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { api, call, everyPage } from '../api/client';
import { useAllRoles, useLoad } from '../api/hooks';
import type { ProblemDetails } from '../api/session';
import { builtInRolesWith, useCan } from '../permissions';

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

/** The roles (custom ones too when the user may read them) that hold `permission`. */
function useRolesWith(permission: string): string[] {
  const roles = useAllRoles();
  if (!roles.data) return builtInRolesWith(permission);
  const [resource, action] = permission.split(':');
  return roles.data
    .filter((role) => ((role.permissions[resource] ?? []) as readonly string[]).includes(action))
    .map((role) => role.role_name);
}

const list = (items: string[]) =>
  items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;

/**
 * Shown instead of a page whose read permission the user lacks: what is missing, which roles give it,
 * and who can give it: the people allowed to change users' roles, by email when the user may list users,
 * else by role.
 */
export function NoAccess({ what, permission }: { what: string; permission: string }) {
  const can = useCan();
  const granting = useRolesWith(permission);
  const assigners = useRolesWith('users:update');
  const people = useLoad(
    async () =>
      can('users:read')
        ? everyPage((cursor) =>
            call(api.GET('/v1/users', { params: { query: { cursor, limit: 100, active: true } } })),
          )
        : null,
    [],
  );
  const admins = (people.data ?? [])
    .filter((user) => assigners.includes(user.role))
    .map((user) => user.email);
  return (
    <div class="note" role="note">
      <p>
        You do not have access to {what}: it needs the permission <code>{permission}</code>
        {granting.length > 0 && (
          <>
            , which the role{granting.length > 1 ? 's' : ''} {list(granting)} include
            {granting.length > 1 ? '' : 's'}
          </>
        )}
        .
      </p>
      <p>
        {admins.length > 0 ? (
          <>
            Ask one of the people who can change roles in your organization:{' '}
            {admins.map((email, index) => (
              <span key={email}>
                {index > 0 && ', '}
                <a href={`mailto:${email}`}>{email}</a>
              </span>
            ))}
            .
          </>
        ) : (
          <>
            Ask your organization's administrators (users with the role {list(assigners)}) to give you such a
            role.
          </>
        )}
      </p>
    </div>
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
/** Day, month and minute, the year only when it is not this one: short enough for a table column. */
const COMPACT: Intl.DateTimeFormatOptions = {
  day: 'numeric',
  month: 'short',
  hour: '2-digit',
  minute: '2-digit',
};

/**
 * A time in the reader's locale. `compact` (for tables) leaves out the seconds, and the year when it is
 * this year; the full time is then its tooltip.
 */
export function When({
  at,
  fallback = '—',
  compact = false,
}: {
  at: string | null | undefined;
  fallback?: string;
  compact?: boolean;
}) {
  if (!at) return <>{fallback}</>;
  const date = new Date(at);
  const full = date.toLocaleString();
  if (!compact) return <time dateTime={at}>{full}</time>;
  const options =
    date.getFullYear() === new Date().getFullYear() ? COMPACT : { ...COMPACT, year: 'numeric' as const };
  return (
    <time dateTime={at} title={full}>
      {date.toLocaleString(undefined, options)}
    </time>
  );
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** One detail's value as a person reads it: a time as a time, a list as a list, text as text. */
export function DetailValue({ value }: { value: unknown }) {
  if (typeof value === 'string') return ISO_TIME.test(value) ? <When at={value} /> : <>{value}</>;
  if (value === null || value === undefined) return <>—</>;
  if (Array.isArray(value) && value.every((item) => typeof item !== 'object' || item === null)) {
    return <>{value.length ? value.map(String).join(', ') : '—'}</>;
  }
  if (typeof value === 'object') return <code>{JSON.stringify(value)}</code>;
  return <>{String(value)}</>;
}

/** An audit entry's details as name/value rows (names as the API spells them, `_` read as a space). */
export function Details({ details }: { details: Record<string, unknown> }) {
  const entries = Object.entries(details);
  if (!entries.length) return <>—</>;
  return (
    <dl class="details">
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt>{name.replace(/_/g, ' ')}</dt>
          <dd>
            <DetailValue value={value} />
          </dd>
        </div>
      ))}
    </dl>
  );
}
