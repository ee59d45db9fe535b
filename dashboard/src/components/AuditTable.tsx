import type { AuditEntry } from '../api/client';
import { useUserNames, type Paged } from '../api/hooks';
import { Link } from '../router';
import { DetailValue, Details, When } from './Page';
import { Table, type Column } from './Table';

/**
 * Audit entries as the organization's log and a key's page both show them: the time on one line, the
 * actor by name (a user's email under it, a key's kind) rather than by id, the key by name, marked when
 * it was deleted (its page would only say "not found"), what changed as before → after, and the other
 * details as name/value rows. The lists ask the API for the names with `expand`; a user the entry does
 * not name is looked up among the organization's users, else shown by id.
 */

function Actor({ entry, nameOf }: { entry: AuditEntry; nameOf: (id: string) => string }) {
  const actor = entry.actor;
  const from = entry.ip && <span class="secondary-line">from {entry.ip}</span>;
  if (actor.type === 'system') {
    return <span class="actor">System{from}</span>;
  }
  const kind = actor.type === 'user' ? 'User' : 'API key';
  const name = actor.name ?? (actor.id ? nameOf(actor.id) : null);
  // The id stays within reach (a tooltip) for matching against other records.
  return (
    <span class="actor" title={`${kind} ${actor.id ?? ''}`.trim()}>
      {name && name !== actor.id ? name : <code>{actor.id}</code>}
      <span class="secondary-line">{actor.type === 'user' ? (actor.email ?? kind) : kind}</span>
      {from}
    </span>
  );
}

interface Change {
  field: string;
  before: unknown;
  after: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What an entry says changed, before and after, in the shapes entries carry them: `changes: {<field>:
 * {from, to}}` (key and policy updates), or `previous_<field>` beside `<field>` (a user's role). The
 * rest of the details are returned as they are.
 */
export function changesOf(details: Record<string, unknown>): {
  changes: Change[];
  rest: Record<string, unknown>;
} {
  const changes: Change[] = [];
  const rest: Record<string, unknown> = { ...details };
  if (isObject(details.changes)) {
    for (const [field, change] of Object.entries(details.changes)) {
      if (isObject(change) && 'from' in change && 'to' in change) {
        changes.push({ field, before: change.from, after: change.to });
      }
    }
    if (changes.length) delete rest.changes;
  }
  for (const name of Object.keys(details)) {
    const field = name.replace(/^previous_/, '');
    if (field !== name && field in details) {
      changes.push({ field, before: details[name], after: details[field] });
      delete rest[name];
      delete rest[field];
    }
  }
  return { changes, rest };
}

/** An entry's details: each change as "before → after" first, then the other details as rows. */
function EntryDetails({ details }: { details: Record<string, unknown> }) {
  const { changes, rest } = changesOf(details);
  if (!changes.length) return <Details details={details} />;
  return (
    <span class="stack">
      <dl class="details changes" aria-label="Before and after">
        {changes.map((change) => (
          <div key={change.field}>
            <dt>{change.field.replace(/_/g, ' ')}</dt>
            <dd>
              <span class="before">
                <DetailValue value={change.before} />
              </span>{' '}
              →{' '}
              <span class="after">
                <DetailValue value={change.after} />
              </span>
            </dd>
          </div>
        ))}
      </dl>
      {Object.keys(rest).length > 0 && <Details details={rest} />}
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
  const users = useUserNames();
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
    // On a phone the time and action stay in view; who and what fold under them.
    { header: 'Actor', fold: true, cell: (entry) => <Actor entry={entry} nameOf={users.nameOf} /> },
    { header: 'Details', fold: true, cell: (entry) => <EntryDetails details={entry.details} /> },
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
