import type { ComponentChildren } from 'preact';
import { useCan } from '../permissions';
import { Link } from '../router';

/** One entry of the navigation: a page, the permission it needs to be of use, and the entries under it. */
export interface NavEntry {
  href: string;
  label: string;
  /** Without it the entry is not shown (the page would only say it is not allowed). */
  read?: string;
  /** Current only on this very page, not on the pages below it. */
  exact?: boolean;
  children?: NavEntry[];
}

/**
 * The spec's path (Settings, then Users and Teams, then API Keys) with the rest of the settings beside
 * it, and the pages of the service's own work after them.
 */
export const NAVIGATION: NavEntry[] = [
  {
    href: '/settings',
    label: 'Settings',
    exact: true,
    children: [
      {
        href: '/settings/users-and-teams',
        label: 'Users and Teams',
        children: [
          { href: '/api-keys', label: 'API Keys', read: 'api_keys:read' },
          { href: '/users', label: 'Users', read: 'users:read' },
          { href: '/teams', label: 'Teams', read: 'teams:read' },
        ],
      },
      { href: '/roles', label: 'Roles', read: 'roles:read' },
      { href: '/webhooks', label: 'Webhooks', read: 'webhooks:read' },
      { href: '/audit-log', label: 'Audit log', read: 'audit:read' },
    ],
  },
  { href: '/identities', label: 'Identities', read: 'identities:read' },
  { href: '/usage', label: 'Usage', read: 'api_keys:read' },
  { href: '/tasks', label: 'Tasks', read: 'tasks:read' },
  // After Tasks, so that a developer (who may read both) still opens on Tasks.
  { href: '/agents', label: 'Agents', read: 'agents:read' },
  { href: '/secrets', label: 'Secrets', read: 'secrets:read' },
  // No permission needed: everyone may see (and revoke) the apps they connected.
  { href: '/connected-apps', label: 'Connected apps' },
];

/**
 * The entries this user can use: a page without its read permission is left out, and a group (such as
 * Settings) only stays while something under it does.
 */
export function visibleEntries(entries: NavEntry[], can: (permission: string) => boolean): NavEntry[] {
  return entries.flatMap((entry) => {
    if (entry.read && !can(entry.read)) return [];
    if (!entry.children) return [entry];
    const children = visibleEntries(entry.children, can);
    return children.length ? [{ ...entry, children }] : [];
  });
}

/** The first page (depth first) the user can use: where the dashboard opens. */
export function firstPage(entries: NavEntry[]): string | undefined {
  for (const entry of entries) {
    if (entry.read) return entry.href;
    const below = entry.children && firstPage(entry.children);
    if (below) return below;
  }
  return undefined;
}

function NavLink({ entry, path, children }: { entry: NavEntry; path: string; children: ComponentChildren }) {
  const current = path === entry.href || (!entry.exact && path.startsWith(`${entry.href}/`));
  return (
    <Link href={entry.href} aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

function Entries({ entries, path }: { entries: NavEntry[]; path: string }) {
  return (
    <ul>
      {entries.map((entry) => (
        <li key={entry.href} class={entry.children ? 'nav-group' : undefined}>
          <NavLink entry={entry} path={path}>
            {entry.label}
          </NavLink>
          {entry.children && <Entries entries={entry.children} path={path} />}
        </li>
      ))}
    </ul>
  );
}

/** The main navigation; on a narrow screen it is shown while `open` (the top bar's Menu button). */
export function Navigation({ path, open }: { path: string; open: boolean }) {
  const can = useCan();
  return (
    <nav id="main-navigation" aria-label="Main" class={open ? 'open' : undefined}>
      <Entries entries={visibleEntries(NAVIGATION, can)} path={path} />
    </nav>
  );
}
