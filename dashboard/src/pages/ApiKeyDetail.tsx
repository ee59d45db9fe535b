import type { ComponentChildren } from 'preact';
import { api, call, type ApiKey } from '../api/client';
import { useLoad, usePaged } from '../api/hooks';
import { KeyActions } from '../components/KeyActions';
import { AuditTable } from '../components/AuditTable';
import { Loading, Page, ProblemNote, When } from '../components/Page';
import { UsagePanel } from '../components/UsagePanel';
import { Link, navigate } from '../router';

const list = (values: string[]) => (values.length ? values.join(', ') : 'Any');

export function ApiKeyDetail({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const key = useLoad(() => call(api.GET('/v1/api-keys/{id}', path)), [id]);
  const title = key.data ? `API key “${key.data.name}”` : 'API key';

  return (
    <Page title={title}>
      <p>
        <Link href="/api-keys">← Back to the key list</Link>
      </p>
      {key.loading && !key.data && <Loading />}
      <ProblemNote problem={key.problem} />
      {key.data && (
        <>
          <KeyActions apiKey={key.data} onChanged={key.reload} onDeleted={() => navigate('/api-keys')} />
          <KeyFacts apiKey={key.data} />
          <Usage id={id} />
          <KeyAuditLog id={id} />
        </>
      )}
    </Page>
  );
}

function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}

function KeyFacts({ apiKey: key }: { apiKey: ApiKey }) {
  const credits = key.credits;
  return (
    <section aria-labelledby="key-details">
      <h2 id="key-details">Details</h2>
      <dl class="facts">
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
        <Fact term="Owner">{key.owner_id ? <code>{key.owner_id}</code> : '—'}</Fact>
        <Fact term="Team">{key.team_id ? <code>{key.team_id}</code> : '—'}</Fact>
        <Fact term="Start">
          <code>{key.start}…</code>
        </Fact>
        <Fact term="Created">
          <When at={key.created_at} />
        </Fact>
        <Fact term="Updated">
          <When at={key.updated_at} />
        </Fact>
        <Fact term="Expiration">
          <When at={key.expiration} fallback="Never" />
        </Fact>
        <Fact term="Last used">
          <When at={key.last_used_at} fallback="Never" />
          {key.last_used_ip && ` from ${key.last_used_ip}`}
        </Fact>
        <Fact term="Last rotated">
          <When at={key.last_rotated_at} fallback="Never" />
        </Fact>
        {key.previous_key_expires_at && (
          <>
            <Fact term="Old value works until">
              <When at={key.previous_key_expires_at} />
            </Fact>
            <Fact term="Old value last used">
              <When at={key.previous_key_last_used_at} fallback="Not since the rotation" />
            </Fact>
          </>
        )}
        <Fact term="Rotation policy">
          {key.rotation_policy.enabled ? (
            <>
              Every {key.rotation_policy.days} days, grace period {key.rotation_policy.grace_period_seconds}{' '}
              s; next <When at={key.rotation_policy.next_rotation_at} />
            </>
          ) : (
            'Off'
          )}
        </Fact>
        <Fact term="Allowed IPs">{list(key.allowed_ips)}</Fact>
        <Fact term="Allowed referrers">{list(key.allowed_referrers)}</Fact>
        <Fact term="Rate limit">
          {key.rate_limit.requests_per_minute ?? 'default'} per minute,{' '}
          {key.rate_limit.requests_per_hour ?? 'default'} per hour
        </Fact>
        <Fact term="Credits">
          {credits
            ? `${credits.remaining} remaining` +
              (credits.refill ? `, refilled ${credits.refill.interval} to ${credits.refill.amount}` : '')
            : 'Unlimited'}
        </Fact>
        <Fact term="Hide credentials">{key.hide_credentials ? 'Yes' : 'No'}</Fact>
        <Fact term="Meta">
          {Object.keys(key.meta).length ? <code>{JSON.stringify(key.meta)}</code> : '—'}
        </Fact>
      </dl>
    </section>
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
