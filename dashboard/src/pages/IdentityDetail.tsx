import { useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { useLoad, usePaged } from '../api/hooks';
import { ConfirmDialog } from '../components/ConfirmDialog';
import {
  creditsOf,
  CreditFields,
  describeCredits,
  describeRateLimit,
  formOf,
  FormErrorsNote,
  metaOf,
  MetaField,
  rateLimitOf,
  RateLimitFields,
  type Identity,
  type IdentityForm,
  useIdentityForm,
} from '../components/IdentityFields';
import { DetailList, Fact, TimeFact } from '../components/Facts';
import { Loading, Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { UsagePanel } from '../components/UsagePanel';
import { useCan } from '../permissions';
import { Link, navigate } from '../router';

type Update = Schemas['UpdateIdentityDto'];

const updateIdentity = (id: string, body: Update) =>
  call(api.PATCH('/v1/identities/{id}', { params: { path: { id } }, body }));

export function IdentityDetail({ id }: { id: string }) {
  const can = useCan();
  const identity = useLoad(() => call(api.GET('/v1/identities/{id}', { params: { path: { id } } })), [id]);
  const [notice, setNotice] = useState('');
  const [deleting, setDeleting] = useState(false);
  const title = identity.data ? `Identity “${identity.data.external_id}”` : 'Identity';
  const saved = (what: string) => {
    setNotice(`${what} saved.`);
    identity.reload();
  };

  return (
    <Page title={title}>
      <p>
        <Link href="/identities">← Back to the identities</Link>
      </p>
      {identity.loading && !identity.data && <Loading />}
      <ProblemNote problem={identity.problem} />
      {identity.data && (
        <>
          {can('identities:delete') && (
            <div class="actions identity-actions">
              <button type="button" class="danger" onClick={() => setDeleting(true)}>
                Delete identity
              </button>
            </div>
          )}
          <IdentityFacts identity={identity.data} />
          {can('identities:update') && (
            <section aria-labelledby="identity-settings">
              <h2 id="identity-settings">Settings</h2>
              <p class="status-line" role="status">
                {notice}
              </p>
              {/* Keyed by the last change: after a save every form starts again from what the API holds. */}
              <div class="settings-grid" key={identity.data.updated_at}>
                <RateLimitForm identity={identity.data} onSaved={() => saved('Rate limit')} />
                <CreditsForm identity={identity.data} onSaved={saved} />
                <MetaForm identity={identity.data} onSaved={() => saved('Meta')} />
              </div>
            </section>
          )}
          {can('api_keys:read') && <IdentityKeys id={id} />}
          <UsagePanel
            headingId="identity-usage"
            load={(query) => call(api.GET('/v1/identities/{id}/usage', { params: { path: { id }, query } }))}
            deps={[id]}
          />
        </>
      )}
      {deleting && identity.data && (
        <ConfirmDialog
          title={`Delete the identity ${identity.data.external_id}?`}
          confirmLabel="Delete"
          confirm={() => call(api.DELETE('/v1/identities/{id}', { params: { path: { id } } }))}
          onDone={() => navigate('/identities')}
          onClose={() => setDeleting(false)}
        >
          <p>
            Its limits, credits and meta go with it. An identity that keys still name cannot be deleted:
            detach or delete its keys first.
          </p>
        </ConfirmDialog>
      )}
    </Page>
  );
}

function IdentityFacts({ identity }: { identity: Identity }) {
  return (
    <DetailList headingId="identity-details" heading="Details">
      <Fact term="ID">
        <code>{identity.id}</code>
      </Fact>
      <Fact term="External ID">{identity.external_id}</Fact>
      <Fact term="Rate limit">{describeRateLimit(identity.rate_limit)}</Fact>
      <Fact term="Credits">{describeCredits(identity.credits)}</Fact>
      {identity.credits && (
        <TimeFact term="Last refill" at={identity.credits.refilled_at} fallback="Not yet" />
      )}
      <Fact term="Keys">{identity.key_count}</Fact>
      <Fact term="Meta">
        {Object.keys(identity.meta).length ? <code>{JSON.stringify(identity.meta)}</code> : '—'}
      </Fact>
      <TimeFact term="Created" at={identity.created_at} />
      <TimeFact term="Updated" at={identity.updated_at} />
    </DetailList>
  );
}

/** One form of the settings: it sends only what `bodyOf` makes of the form. */
function useSettingsForm(identity: Identity, bodyOf: (form: IdentityForm) => Update, onSaved: () => void) {
  return useIdentityForm(
    () => formOf(identity),
    bodyOf,
    (body) => updateIdentity(identity.id, body),
    onSaved,
  );
}

function RateLimitForm({ identity, onSaved }: { identity: Identity; onSaved: () => void }) {
  const { form, set, errors, ownErrors, action, submit } = useSettingsForm(
    identity,
    (values) => ({ rate_limit: rateLimitOf(values) }),
    onSaved,
  );
  return (
    <form class="card" aria-labelledby="rate-limit-form" onSubmit={(event) => void submit(event)} noValidate>
      <h3 id="rate-limit-form">Rate limit</h3>
      <RateLimitFields form={form} set={set} errors={errors} />
      <FormErrorsNote errors={ownErrors} />
      <ProblemNote problem={action.problem} />
      <button type="submit" disabled={action.busy}>
        Save rate limit
      </button>
    </form>
  );
}

function CreditsForm({ identity, onSaved }: { identity: Identity; onSaved: (what: string) => void }) {
  const { form, set, errors, ownErrors, action, submit } = useSettingsForm(
    identity,
    (values) => ({ credits: creditsOf(values) }),
    () => onSaved('Credits'),
  );
  return (
    <div class="card">
      <form aria-labelledby="credits-form" onSubmit={(event) => void submit(event)} noValidate>
        <h3 id="credits-form">Credits</h3>
        <p class="hint">Saving sets the balance to Credits, whatever is left now.</p>
        <CreditFields form={form} set={set} errors={errors} />
        <FormErrorsNote errors={ownErrors} />
        <ProblemNote problem={action.problem} />
        <button type="submit" disabled={action.busy}>
          Save credits
        </button>
      </form>
    </div>
  );
}

function MetaForm({ identity, onSaved }: { identity: Identity; onSaved: () => void }) {
  const { form, set, errors, ownErrors, action, submit } = useSettingsForm(
    identity,
    (values) => ({ meta: metaOf(values) }),
    onSaved,
  );
  return (
    <form class="card" aria-labelledby="meta-form" onSubmit={(event) => void submit(event)} noValidate>
      <h3 id="meta-form">Meta</h3>
      <MetaField form={form} set={set} errors={errors} />
      <FormErrorsNote errors={ownErrors} />
      <ProblemNote problem={action.problem} />
      <button type="submit" disabled={action.busy}>
        Save meta
      </button>
    </form>
  );
}

function IdentityKeys({ id }: { id: string }) {
  const keys = usePaged(
    (cursor) => call(api.GET('/v1/api-keys', { params: { query: { identity_id: id, cursor } } })),
    [id],
  );
  return (
    <section aria-labelledby="identity-keys">
      <h2 id="identity-keys">Keys</h2>
      <Table
        caption="Keys of this identity"
        rows={keys.items}
        rowKey={(key) => key.id}
        paged={keys}
        empty="No key belongs to this identity. A key's identity is set on the key."
        columns={[
          {
            header: 'Name',
            rowHeader: true,
            cell: (key) => <Link href={`/api-keys/${key.id}`}>{key.name}</Link>,
          },
          { header: 'Status', cell: (key) => <span class={`badge ${key.status}`}>{key.status}</span> },
          { header: 'Start', fold: true, cell: (key) => <code>{key.start}…</code> },
          { header: 'Last used', fold: true, cell: (key) => <When at={key.last_used_at} fallback="Never" /> },
        ]}
      />
    </section>
  );
}
