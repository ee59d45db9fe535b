import { api, call, type ApiKey } from '../api/client';
import { useLoad, usePaged, useUserNames } from '../api/hooks';
import { useKeyDefaults, useLeakReports } from '../api/keys';
import { KeyActions } from '../components/KeyActions';
import { AuditTable } from '../components/AuditTable';
import type { KeyDefaults } from '../components/KeyForm';
import { DetailList, Fact, TimeFact } from '../components/Facts';
import { Loading, Page, ProblemNote, When } from '../components/Page';
import { UsagePanel } from '../components/UsagePanel';
import { Link, navigate } from '../router';
import { LeakSource, RateLimit } from './ApiKeys';

const list = (values: string[]) => (values.length ? values.join(', ') : 'Any');

/** Seconds in the largest unit that divides them: "1 hour", "7 days", "90 seconds", "none". */
function duration(seconds: number): string {
  if (seconds === 0) return 'none';
  for (const [unit, size] of [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? '' : 's'}`;
  }
  return `${seconds} seconds`;
}

export function ApiKeyDetail({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const key = useLoad(() => call(api.GET('/v1/api-keys/{id}', path)), [id]);
  const title = key.data ? `API key “${key.data.name}”` : 'API key';
  const defaults = useKeyDefaults();

  return (
    <Page title={title}>
      <p>
        <Link href="/api-keys">← Back to the key list</Link>
      </p>
      {key.loading && !key.data && <Loading />}
      <ProblemNote problem={key.problem} />
      {key.data && (
        <>
          <KeyActions
            apiKey={key.data}
            defaults={defaults}
            onChanged={key.reload}
            onDeleted={() => navigate('/api-keys')}
          />
          {key.data.leaked_at && <Leaked apiKey={key.data} />}
          <KeyFacts apiKey={key.data} defaults={defaults} />
          <Usage id={id} />
          <KeyAuditLog id={id} />
        </>
      )}
    </Page>
  );
}

/** A leaked key's warning: when it was first reported, and every place it was found. */
function Leaked({ apiKey: key }: { apiKey: ApiKey }) {
  const reports = useLeakReports([key]).get(key.id);
  return (
    <section class="leaked-notice" aria-labelledby="key-leaked">
      <h2 id="key-leaked">
        <span class="badge leaked">leaked</span> This key was reported leaked
      </h2>
      <p>
        First reported <When at={key.leaked_at} />. Its status is <strong>{key.status}</strong>
        {key.status === 'active' ? ': it still works. Rotate or delete it.' : '.'}
      </p>
      {reports && reports.length > 0 && (
        <ul class="leak-reports">
          {reports.map((report) => (
            <li key={report.reported_at + (report.url ?? '')}>
              <LeakSource report={report} /> (<When at={report.reported_at} />, action taken:{' '}
              {report.action_taken})
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function KeyFacts({ apiKey: key, defaults }: { apiKey: ApiKey; defaults?: KeyDefaults }) {
  const credits = key.credits;
  const users = useUserNames();
  return (
    <DetailList headingId="key-details" heading="Details">
      <Fact term="ID">
        <code>{key.id}</code>
      </Fact>
      <Fact term="Name">{key.name}</Fact>
      <Fact term="Description">{key.description || '—'}</Fact>
      <Fact term="Status">
        <span class={`badge ${key.status}`}>{key.status}</span>
      </Fact>
      <Fact term="Enabled">{key.enabled ? 'Yes' : 'No'}</Fact>
      <Fact term="Role">{key.role}</Fact>
      <Fact term="Permissions">{key.permissions.join(', ') || 'None'}</Fact>
      <Fact term="Type">{key.type}</Fact>
      <Fact term="Owner">
        {key.owner_id ? (
          users.known(key.owner_id) ? (
            <span title={key.owner_id}>{users.nameOf(key.owner_id)}</span>
          ) : (
            <code>{key.owner_id}</code>
          )
        ) : (
          '—'
        )}
      </Fact>
      <Fact term="Team">{key.team_id ? <code>{key.team_id}</code> : '—'}</Fact>
      <Fact term="Identity">
        {key.identity ? (
          <Link href={`/identities/${encodeURIComponent(key.identity.id)}`}>{key.identity.external_id}</Link>
        ) : (
          'None'
        )}
      </Fact>
      <Fact term="Start">
        <code>{key.start}…</code>
      </Fact>
      <TimeFact term="Created" at={key.created_at} />
      <TimeFact term="Updated" at={key.updated_at} />
      <TimeFact term="Expiration" at={key.expiration} fallback="Never" />
      <Fact term="Last used">
        <When at={key.last_used_at} fallback="Never" />
        {key.last_used_ip && ` from ${key.last_used_ip}`}
      </Fact>
      <TimeFact term="Last rotated" at={key.last_rotated_at} fallback="Never" />
      {key.previous_key_expires_at && (
        <>
          <TimeFact term="Old value works until" at={key.previous_key_expires_at} />
          <TimeFact
            term="Old value last used"
            at={key.previous_key_last_used_at}
            fallback="Not since the rotation"
          />
        </>
      )}
      <Fact term="Rotation policy">
        {key.rotation_policy.enabled ? (
          <>
            Every {key.rotation_policy.days} days, grace period{' '}
            {duration(key.rotation_policy.grace_period_seconds)}; next{' '}
            <When at={key.rotation_policy.next_rotation_at} />
          </>
        ) : (
          'Off'
        )}
      </Fact>
      <Fact term="Allowed IPs">{list(key.allowed_ips)}</Fact>
      <Fact term="Allowed referrers">{list(key.allowed_referrers)}</Fact>
      <Fact term="Rate limit">
        <RateLimit apiKey={key} defaults={defaults} />
      </Fact>
      <Fact term="Credits">
        {credits
          ? `${credits.remaining} remaining` +
            (credits.refill ? `, refilled ${credits.refill.interval} to ${credits.refill.amount}` : '')
          : 'Unlimited'}
      </Fact>
      <Fact term="Hide credentials">{key.hide_credentials ? 'Yes' : 'No'}</Fact>
      <Fact term="Meta">{Object.keys(key.meta).length ? <code>{JSON.stringify(key.meta)}</code> : '—'}</Fact>
    </DetailList>
  );
}

function Usage({ id }: { id: string }) {
  return (
    <UsagePanel
      headingId="key-usage"
      load={(query) => call(api.GET('/v1/api-keys/{id}/usage', { params: { path: { id }, query } }))}
      deps={[id]}
    />
  );
}

function KeyAuditLog({ id }: { id: string }) {
  const entries = usePaged(
    (cursor) =>
      call(
        api.GET('/v1/api-keys/{id}/audit-log', {
          params: { path: { id }, query: { cursor, expand: ['actor'] } },
        }),
      ),
    [id],
  );
  return (
    <section aria-labelledby="key-audit">
      <h2 id="key-audit">Audit log</h2>
      <AuditTable caption="Audit log of this key" entries={entries} showKey={false} empty="No entries yet." />
    </section>
  );
}
