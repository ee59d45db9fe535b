import { useEffect, useState } from 'preact/hooks';
import { api, call, type ApiKey, type Schemas } from '../api/client';
import { useUserNames } from '../api/hooks';
import {
  safeLink,
  useCursorPages,
  useKeyDefaults,
  useLeakReports,
  useRequestsLastDay,
  type LeakReport,
} from '../api/keys';
import { SelectField, TextField, options } from '../components/Field';
import { KeyActions } from '../components/KeyActions';
import { count, KEY_TYPES, KeyFormDialog, type KeyDefaults } from '../components/KeyForm';
import { Page, ProblemNote, When } from '../components/Page';
import { SecretOnce } from '../components/SecretOnce';
import { UseThisKey } from '../components/UseThisKey';
import { Table } from '../components/Table';
import { CreateButton } from '../components/Toolbar';
import { useCan } from '../permissions';
import { Link } from '../router';

type KeyStatus = ApiKey['status'];
type KeyType = ApiKey['type'];
type Created = Schemas['CreatedApiKeyResponse'];

const STATUSES: KeyStatus[] = ['active', 'expired', 'revoked', 'disabled'];

/** Typing pauses this long before the list is asked again: one request per word, not per key press. */
const SEARCH_DEBOUNCE_MS = 300;

/** `value`, once it has stopped changing for `delay` ms. */
function useDebounced<T>(value: T, delay: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), delay);
    return () => clearTimeout(timer);
  }, [value, delay]);
  return settled;
}

export function ApiKeys() {
  const can = useCan();
  const [status, setStatus] = useState<'' | KeyStatus>('');
  const [type, setType] = useState<'' | KeyType>('');
  const [search, setSearch] = useState('');
  const searched = useDebounced(search.trim(), SEARCH_DEBOUNCE_MS);
  const [creating, setCreating] = useState(false);
  // The new key's value: in this component's state only, gone when the user leaves the page.
  const [created, setCreated] = useState<Created | null>(null);
  const defaults = useKeyDefaults();

  const keys = useCursorPages(
    (cursor) =>
      call(
        api.GET('/v1/api-keys', {
          params: {
            query: {
              cursor,
              status: status || undefined,
              type: type || undefined,
              search: searched || undefined,
            },
          },
        }),
      ),
    [status, type, searched],
  );
  const leaks = useLeakReports(keys.items);
  // Asked again with each list shown, so a reload shows the requests made since.
  const requests = useRequestsLastDay(keys.items);
  const users = useUserNames();
  const filtered = Boolean(status || type || searched);
  // A new organization: the page's one call to action is its first key.
  const noKeysAtAll = !keys.loading && !keys.problem && !keys.items.length && !filtered && keys.number === 1;

  return (
    <Page title="API Keys">
      <p class="lead">
        The keys of your organization. A key's value is shown once, when it is created or rotated.
      </p>
      {created && (
        <SecretOnce
          title="Key created"
          label="API key value"
          value={created.key}
          onDone={() => setCreated(null)}
        >
          <p>
            Key <strong>{created.name}</strong> was created with the role <code>{created.role}</code>.
          </p>
          <UseThisKey value={created.key} />
        </SecretOnce>
      )}
      {noKeysAtAll ? (
        <div class="empty-state">
          <h2>No keys yet</h2>
          <p>
            A key lets a program call this service with the permissions of a role. Its value is shown once,
            when you create it.
          </p>
          {can('api_keys:create') ? (
            <button type="button" onClick={() => setCreating(true)}>
              Create key
            </button>
          ) : (
            <p class="note" role="note">
              You may not create keys. Ask an administrator for a role that allows it.
            </p>
          )}
        </div>
      ) : (
        <>
          <div class="toolbar">
            <div class="search-field">
              <TextField
                label="Search keys"
                type="search"
                value={search}
                onValue={setSearch}
                maxLength={100}
                placeholder="Name or start (sk_…)"
              />
            </div>
            <SelectField
              label="Filter by status"
              value={status}
              onValue={(value) => setStatus(value as KeyStatus | '')}
              options={[{ value: '', label: 'Any status' }, ...options(STATUSES)]}
            />
            <SelectField
              label="Filter by type"
              value={type}
              onValue={(value) => setType(value as KeyType | '')}
              options={[{ value: '', label: 'Any type' }, ...options(KEY_TYPES)]}
            />
            <CreateButton permission="api_keys:create" label="Create key" onClick={() => setCreating(true)} />
          </div>
          <div class="keys-table">
            <Table
              caption="API keys"
              rows={keys.items}
              rowKey={(key) => key.id}
              loading={keys.loading}
              empty={filtered ? 'No keys match this search and these filters.' : 'No keys on this page.'}
              columns={[
                {
                  header: 'Name',
                  rowHeader: true,
                  cell: (key) => (
                    <>
                      <span id={`key-name-${key.id}`}>
                        <Link href={`/api-keys/${key.id}`}>{key.name}</Link>
                      </span>
                      {key.leaked_at && <LeakMark reports={leaks.get(key.id)} />}
                    </>
                  ),
                },
                // On a phone the name, status and actions stay in view; the rest folds under the name.
                { header: 'Role', fold: true, cell: (key) => key.role },
                {
                  header: 'Type',
                  fold: true,
                  cell: (key) => (
                    <span class="stack">
                      {key.type}
                      {key.owner_id && (
                        <span class="secondary-line" title={`Owner ${key.owner_id}`}>
                          {users.nameOf(key.owner_id)}
                        </span>
                      )}
                    </span>
                  ),
                },
                { header: 'Status', cell: (key) => <span class={`badge ${key.status}`}>{key.status}</span> },
                {
                  header: 'Requests (24 h)',
                  fold: true,
                  cell: (key) => (requests ? count(requests.get(key.id) ?? 0) : '…'),
                },
                {
                  header: 'Credits',
                  fold: true,
                  cell: (key) => (key.credits ? count(key.credits.remaining) : 'Unlimited'),
                },
                {
                  header: 'Identity',
                  fold: true,
                  cell: (key) =>
                    key.identity ? (
                      <Link href={`/identities/${encodeURIComponent(key.identity.id)}`}>
                        {key.identity.external_id}
                      </Link>
                    ) : (
                      '—'
                    ),
                },
                { header: 'Start', fold: true, cell: (key) => <code>{key.start}…</code> },
                {
                  header: 'Rate limit',
                  fold: true,
                  cell: (key) => <RateLimit apiKey={key} defaults={defaults} compact />,
                },
                {
                  header: 'Last used',
                  fold: true,
                  cell: (key) => <When at={key.last_used_at} fallback="Never" compact />,
                },
                {
                  header: 'Expiration',
                  fold: true,
                  cell: (key) => <When at={key.expiration} fallback="Never" compact />,
                },
                {
                  header: 'Actions',
                  cell: (key) => (
                    <KeyActions
                      apiKey={key}
                      defaults={defaults}
                      variant="menu"
                      describedBy={`key-name-${key.id}`}
                      onChanged={keys.reload}
                      onDeleted={keys.reload}
                    />
                  ),
                },
              ]}
            />
          </div>
          <ProblemNote problem={keys.problem} />
          {(keys.hasPrevious || keys.hasNext) && (
            // A div with the navigation role: the stylesheet's `nav` rules are the main navigation's.
            <div class="pager" role="navigation" aria-label="Pages of keys">
              <button type="button" class="secondary" disabled={!keys.hasPrevious} onClick={keys.previous}>
                Previous page
              </button>
              <span class="page-number" aria-live="polite">
                Page {keys.number}
              </span>
              <button type="button" class="secondary" disabled={!keys.hasNext} onClick={keys.next}>
                Next page
              </button>
            </div>
          )}
        </>
      )}
      {creating && (
        <KeyFormDialog
          defaults={defaults}
          onClose={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
            keys.first();
          }}
        />
      )}
    </Page>
  );
}

/**
 * A key's rate limit as numbers: its own, or the service's default, said so ("600/min · 20,000/h
 * (defaults)"); the word "default" alone until the defaults are loaded.
 */
/**
 * A key's limits as numbers, the service's defaults where the key has none. `compact` (the table) keeps
 * the row on one line: the word "default" is then for screen readers and the tooltip, the numbers muted.
 */
export function RateLimit({
  apiKey: key,
  defaults,
  compact = false,
}: {
  apiKey: ApiKey;
  defaults?: KeyDefaults;
  compact?: boolean;
}) {
  const { requests_per_minute: perMinute, requests_per_hour: perHour } = key.rate_limit;
  const value = (own: number | null, fallback: number | undefined, unit: string) =>
    own !== null
      ? `${count(own)}/${unit}`
      : fallback === undefined
        ? `default/${unit}`
        : `${count(fallback)}/${unit}`;
  const minute = value(perMinute, defaults?.rate_limit.requests_per_minute, 'min');
  const hour = value(perHour, defaults?.rate_limit.requests_per_hour, 'h');
  const marked = defaults !== undefined;
  const note = compact ? 'visually-hidden' : 'muted';
  if (perMinute === null && perHour === null) {
    return (
      <span
        class={compact && marked ? 'rate-limit muted' : 'rate-limit'}
        title={compact && marked ? "The service's default limits" : undefined}
      >
        {/* The separator ends the first number's line when the two break apart. */}
        <span>{minute} ·</span> <span>{hour}</span>
        {marked && <span class={note}> (defaults)</span>}
      </span>
    );
  }
  return (
    <span class="rate-limit">
      <span>
        {minute}
        {perMinute === null && marked && <span class={note}> (default)</span>} ·
      </span>{' '}
      <span>
        {hour}
        {perHour === null && marked && <span class={note}> (default)</span>}
      </span>
    </span>
  );
}

/** The leaked mark of a row: a badge, and where the newest report found the key. */
function LeakMark({ reports }: { reports: LeakReport[] | undefined }) {
  const newest = reports?.[0];
  return (
    <span class="leak-mark">
      <span class="badge leaked">leaked</span> {newest && <LeakSource report={newest} />}
      {reports && reports.length > 1 && <span class="hint"> and {reports.length - 1} more</span>}
    </span>
  );
}

/** Where a report found a key: its URL as a link (http(s) only), or what reported it. */
export function LeakSource({ report }: { report: LeakReport }) {
  if (!report.url) {
    return <span>reported {report.source === 'github' ? 'by GitHub' : 'publicly'}, no URL</span>;
  }
  const href = safeLink(report.url);
  return href ? (
    <a class="leak-url" href={href} rel="noopener noreferrer" target="_blank">
      {report.url}
    </a>
  ) : (
    <code class="leak-url">{report.url}</code>
  );
}
