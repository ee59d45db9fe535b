import { useState } from 'preact/hooks';
import type { paths } from '../../../examples/gatehouse-api';
import { api, call } from '../api/client';
import { usePaged } from '../api/hooks';
import { SelectField, options } from '../components/Field';
import { Details, Page, When } from '../components/Page';
import { Table } from '../components/Table';
import { Link } from '../router';

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
];

export function AuditLog() {
  const [action, setAction] = useState<ActionFilter | ''>('');
  const entries = usePaged(
    (cursor) =>
      call(api.GET('/v1/audit-log', { params: { query: { cursor, action: action || undefined } } })),
    [action],
  );

  return (
    <Page title="Audit log">
      <p class="lead">
        What happened to your organization's keys, webhooks, users, teams, roles and sign-ins, newest first.
      </p>
      <div class="toolbar">
        <SelectField
          label="Filter by action"
          value={action}
          onValue={(value) => setAction(value as ActionFilter | '')}
          options={[{ value: '', label: 'Any action' }, ...options(ACTIONS)]}
        />
      </div>
      <Table
        caption="Audit log"
        rows={entries.items}
        rowKey={(entry) => entry.id}
        paged={entries}
        empty="No entries match."
        columns={[
          { header: 'Time', rowHeader: true, cell: (entry) => <When at={entry.created_at} /> },
          { header: 'Action', cell: (entry) => <code>{entry.action}</code> },
          {
            header: 'Key',
            cell: (entry) =>
              entry.key_id ? (
                <Link href={`/api-keys/${entry.key_id}`}>
                  <code>{entry.key_id}</code>
                </Link>
              ) : (
                '—'
              ),
          },
          {
            header: 'Actor',
            cell: (entry) => `${entry.actor.type}${entry.actor.id ? ` ${entry.actor.id}` : ''}`,
          },
          { header: 'IP', cell: (entry) => entry.ip ?? '—' },
          { header: 'Details', cell: (entry) => <Details details={entry.details} /> },
        ]}
      />
    </Page>
  );
}
