import type { AuditEntry } from '../api/client';
import type { Paged } from '../api/hooks';
import { Link } from '../router';
import { Details, When } from './Page';
import { Table, type Column } from './Table';

/**
 * Audit entries as the organization's log and a key's page both show them: the time on one line, the
 * actor by email (users) or key name (keys) rather than by id, the key by name, marked when it was
 * deleted (its page would only say "not found"), and the details as name/value rows. The lists ask the
 * API for the names with `expand`.
 */

function Actor({ entry }: { entry: AuditEntry }) {
  const actor = entry.actor;
  const from = entry.ip && <span class="secondary-line">from {entry.ip}</span>;
  if (actor.type === 'system') {
    return <span class="actor">System{from}</span>;
  }
  const label = actor.type === 'user' ? actor.email : actor.name;
  const kind = actor.type === 'user' ? 'User' : 'API key';
  // The id stays within reach (a tooltip) for matching against other records.
  return (
    <span class="actor" title={`${kind} ${actor.id ?? ''}`.trim()}>
      {label ?? <code>{actor.id}</code>}
      <span class="secondary-line">{actor.type === 'user' ? actor.name : kind}</span>
      {from}
    </span>
  );
}

function KeyRef({ entry }: { entry: AuditEntry }) {
  if (!entry.key_id) return <>—</>;
  const name = entry.key?.name ?? entry.key_id;
  if (entry.key?.deleted) {
    return (
      <span class="key-ref" title={entry.key_id}>
        {name} <span class="badge deleted">deleted</span>
      </span>
    );
  }
  return (
    <Link href={`/api-keys/${entry.key_id}`} class="key-ref">
      {name}
    </Link>
  );
}

export function AuditTable({
  caption,
  entries,
  showKey,
  empty,
}: {
  caption: string;
  entries: Paged<AuditEntry>;
  /** The organization's log names each entry's key (under its action); a key's own log need not. */
  showKey: boolean;
  empty: string;
}) {
  // Four columns, so the details keep a readable width beside them on a laptop; the key goes under the
  // action it concerns, the address under the actor.
  const columns: Column<AuditEntry>[] = [
    { header: 'Time', rowHeader: true, cell: (entry) => <When at={entry.created_at} /> },
    {
      header: 'Action',
      cell: (entry) => (
        <span class="stack">
          <code class="nowrap">{entry.action}</code>
          {showKey && entry.key_id && (
            <span class="secondary-line">
              <KeyRef entry={entry} />
            </span>
          )}
        </span>
      ),
    },
    { header: 'Actor', cell: (entry) => <Actor entry={entry} /> },
    { header: 'Details', cell: (entry) => <Details details={entry.details} /> },
  ];
  return (
    <Table
      caption={caption}
      class="audit"
      rows={entries.items}
      rowKey={(entry) => entry.id}
      paged={entries}
      empty={empty}
      columns={columns}
    />
  );
}
