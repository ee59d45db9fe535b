import { useState } from 'preact/hooks';
import type { paths } from '../../../examples/gatehouse-api';
import { api, call } from '../api/client';
import { usePaged } from '../api/hooks';
import { SelectField, options } from '../components/Field';
import { AuditTable } from '../components/AuditTable';
import { Page } from '../components/Page';

type ActionFilter = NonNullable<NonNullable<paths['/v1/audit-log']['get']['parameters']['query']>['action']>;

const ACTIONS: ActionFilter[] = [
  'key.created',
  'key.updated',
  'key.rotated',
  'key.deleted',
  'key.revoked',
  'key.expiring',
  'key.expired',
  'key.disabled',
  'key.enabled',
  'key.credits_low',
  'key.denied',
  'webhook.created',
  'webhook.updated',
  'webhook.secret_rotated',
  'webhook.deleted',
  'webhook.disabled',
  'user.*',
  'user.created',
  'user.updated',
  'user.deactivated',
  'user.activated',
  'team.*',
  'team.created',
  'team.member_added',
  'team.member_removed',
  'role.*',
  'role.created',
  'role.updated',
  'role.deleted',
  'session.*',
  'session.signed_in',
  'session.signed_out',
  'identity.*',
  'identity.created',
  'identity.updated',
  'identity.deleted',
  'identity.credits_low',
  'key.leaked',
  'organization.policies_updated',
];

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
