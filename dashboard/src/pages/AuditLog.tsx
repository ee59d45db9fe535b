import { useState } from 'preact/hooks';
import type { paths } from '../../../examples/gatehouse-api';
import { api, call } from '../api/client';
import { usePaged } from '../api/hooks';
import { SelectField, options } from '../components/Field';
import { AuditTable } from '../components/AuditTable';
import { Page } from '../components/Page';

type ActionFilter = NonNullable<NonNullable<paths['/v1/audit-log']['get']['parameters']['query']>['action']>;

// Every filter the API accepts (each action, and each group such as `user.*` before its actions): a record
// over the generated client's union, so an action added to the API fails the dashboard's type check until
// the filter offers it.
const OFFERED: Record<ActionFilter, true> = {
  'key.*': true,
  'key.created': true,
  'key.updated': true,
  'key.rotated': true,
  'key.deleted': true,
  'key.revoked': true,
  'key.expiring': true,
  'key.expired': true,
  'key.disabled': true,
  'key.enabled': true,
  'key.credits_low': true,
  'key.denied': true,
  'key.leaked': true,
  'webhook.*': true,
  'webhook.created': true,
  'webhook.updated': true,
  'webhook.secret_rotated': true,
  'webhook.deleted': true,
  'webhook.disabled': true,
  'user.*': true,
  'user.created': true,
  'user.updated': true,
  'user.deactivated': true,
  'user.activated': true,
  'team.*': true,
  'team.created': true,
  'team.member_added': true,
  'team.member_removed': true,
  'role.*': true,
  'role.created': true,
  'role.updated': true,
  'role.deleted': true,
  'session.*': true,
  'session.signed_in': true,
  'session.signed_out': true,
  'identity.*': true,
  'identity.created': true,
  'identity.updated': true,
  'identity.deleted': true,
  'identity.credits_low': true,
  'organization.*': true,
  'organization.policies_updated': true,
};
const ACTIONS = Object.keys(OFFERED) as ActionFilter[];

export function AuditLog() {
  const [action, setAction] = useState<ActionFilter | ''>('');
  const entries = usePaged(
    (cursor) =>
      call(
        api.GET('/v1/audit-log', {
          params: { query: { cursor, action: action || undefined, expand: ['actor', 'key'] } },
        }),
      ),
    [action],
  );

  return (
    <Page title="Audit log">
      <p class="lead">
        What happened to your organization's keys, webhooks, users, teams, roles, identities and sign-ins,
        newest first.
      </p>
      <div class="toolbar">
        <SelectField
          label="Filter by action"
          value={action}
          onValue={(value) => setAction(value as ActionFilter | '')}
          options={[{ value: '', label: 'Any action' }, ...options(ACTIONS)]}
        />
      </div>
      <AuditTable
        caption="Audit log"
        entries={entries}
        showKey
        // "No entries match" only when a filter narrowed the list; else the log is simply empty.
        empty={action ? 'No entries match.' : 'Nothing has been recorded yet.'}
      />
    </Page>
  );
}
