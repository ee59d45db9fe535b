import { api, call, everyPage, type OAuthGrant, type User } from '../api/client';
import { useLoad, usePaged } from '../api/hooks';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { useDialogs } from '../components/Dialog';
import { Page, When } from '../components/Page';
import { Table } from '../components/Table';
import { useCan, useUser } from '../permissions';

/**
 * The OAuth grants (CONTRACT, "AI assistants: MCP and OAuth 2.1"): which apps (AI assistants, mostly) a
 * user allowed to act for them, with what permissions, and when each was last used. Everyone sees their
 * own; `api_keys:read` shows the organization's (the API decides which). `Revoke` is offered on one's own
 * grants, and on everyone's with `api_keys:delete`; once confirmed, the app's tokens are refused at once.
 */

/** What a grant's tokens are for, by the resource's path (`<PUBLIC_URL>/mcp`); else the URL itself. */
const RESOURCES: Record<string, string> = { '/mcp': 'MCP', '/v1': 'REST API', '/a2a': 'A2A' };

function resourceName(resource: string): string {
  try {
    return RESOURCES[new URL(resource).pathname.replace(/\/$/, '')] ?? resource;
  } catch {
    return resource;
  }
}

const appName = (grant: OAuthGrant) => grant.client.client_name || grant.client.client_id;

export function ConnectedApps() {
  const can = useCan();
  const me = useUser();
  const everyone = can('api_keys:read');
  const grants = usePaged(() => call(api.GET('/v1/oauth/grants')), []);
  // Who each grant acts for, by name and email, when the signed-in user may list the organization's users.
  const users = useLoad(
    async () =>
      can('users:read')
        ? everyPage((cursor) => call(api.GET('/v1/users', { params: { query: { cursor, limit: 100 } } })))
        : [],
    [],
  );
  const people = new Map<string, Pick<User, 'name' | 'email'>>(
    (users.data ?? []).map((user) => [user.id, user]),
  );
  people.set(me.id, me);
  const { dialog, open, close, done } = useDialogs<OAuthGrant>(grants.reload);
  const mayRevoke = (grant: OAuthGrant) => grant.user_id === me.id || can('api_keys:delete');
  const person = (id: string) => people.get(id);

  return (
    <Page title="Connected apps">
      <p class="lead">
        {everyone
          ? 'Apps, such as AI assistants, that people of your organization allowed to act for them.'
          : 'Apps, such as AI assistants, that you allowed to act for you.'}{' '}
        Each acts with the permissions granted, and never more than its user holds. Revoking one ends its
        access at once.
      </p>
      <Table
        caption="Connected apps"
        rows={grants.items}
        rowKey={(grant) => grant.id}
        paged={grants}
        empty="No connected apps."
        columns={[
          {
            header: 'App',
            rowHeader: true,
            cell: (grant) => (
              <span class="actor">
                {appName(grant)}
                {grant.client.client_name && <span class="secondary-line">{grant.client.client_id}</span>}
              </span>
            ),
          },
          {
            header: 'User',
            fold: true,
            cell: (grant) => {
              const who = person(grant.user_id);
              if (!who) return <code>{grant.user_id}</code>;
              return (
                <span class="actor" title={`User ${grant.user_id}`}>
                  {who.name}
                  <span class="secondary-line">{who.email}</span>
                </span>
              );
            },
          },
          {
            header: 'Permissions',
            fold: true,
            cell: (grant) => <span class="details">{grant.scopes.join(', ') || '—'}</span>,
          },
          {
            header: 'For',
            fold: true,
            cell: (grant) => <span title={grant.resource}>{resourceName(grant.resource)}</span>,
          },
          { header: 'Connected', fold: true, cell: (grant) => <When at={grant.created_at} compact /> },
          {
            header: 'Last used',
            fold: true,
            cell: (grant) => <When at={grant.last_used_at} fallback="Never" compact />,
          },
          {
            header: 'Actions',
            cell: (grant) =>
              mayRevoke(grant) ? (
                <button type="button" class="danger" onClick={() => open(grant)}>
                  Revoke
                </button>
              ) : (
                '—'
              ),
          },
        ]}
      />
      {dialog && (
        <ConfirmDialog
          title={`Revoke ${appName(dialog)}?`}
          confirmLabel="Revoke"
          confirm={() => call(api.DELETE('/v1/oauth/grants/{id}', { params: { path: { id: dialog.id } } }))}
          onDone={done}
          onClose={close}
        >
          <p>
            {appName(dialog)} can no longer act for{' '}
            {dialog.user_id === me.id ? 'you' : (person(dialog.user_id)?.name ?? dialog.user_id)}: every token
            it holds is refused at once. To connect again it has to ask for access anew.
          </p>
        </ConfirmDialog>
      )}
    </Page>
  );
}
