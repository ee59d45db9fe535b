import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { useLoad, usePaged } from '../api/hooks';
import { auditActionFilters, type AuditActionFilter } from '../api/vocabulary';
import { SelectField, options } from '../components/Field';
import { AuditTable } from '../components/AuditTable';
import { Page, ProblemNote } from '../components/Page';

export function AuditLog() {
  const [action, setAction] = useState<AuditActionFilter | ''>('');
  // The server's filters (an extension's actions among them), not a list kept here.
  const filters = useLoad(auditActionFilters, []);
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
          onValue={(value) => setAction(value as AuditActionFilter | '')}
          options={[{ value: '', label: 'Any action' }, ...options(filters.data ?? [])]}
        />
      </div>
      <ProblemNote problem={filters.problem} />
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
