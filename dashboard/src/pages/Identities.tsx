import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { useAction, usePaged } from '../api/hooks';
import { Dialog } from '../components/Dialog';
import {
  CheckedField,
  creditsOf,
  CreditFields,
  describeCredits,
  describeMeta,
  describeRateLimit,
  EMPTY_IDENTITY_FORM,
  fieldErrorsOf,
  FormErrors,
  FormErrorsNote,
  metaOf,
  MetaField,
  rateLimitOf,
  RateLimitFields,
  useIdentityForm,
} from '../components/IdentityFields';
import { Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { useCan } from '../permissions';
import { Link, navigate } from '../router';

export function Identities() {
  const can = useCan();
  const [creating, setCreating] = useState(false);
  const [search, setSearch] = useState('');
  const [externalId, setExternalId] = useState('');
  const identities = usePaged(
    (cursor) =>
      call(
        api.GET('/v1/identities', {
          params: { query: { cursor, external_id: externalId || undefined } },
        }),
      ),
    [externalId],
  );

  return (
    <Page title="Identities">
      <p class="lead">
        The customers behind your keys, by your own id: limits and credits their keys share, your data about
        them, and their usage.
      </p>
      <div class="toolbar">
        <form
          class="inline-form"
          role="search"
          onSubmit={(event) => {
            event.preventDefault();
            setExternalId(search.trim());
          }}
        >
          <CheckedField label="Find by external ID">
            {(props) => (
              <input
                {...props}
                type="search"
                value={search}
                onInput={(e) => setSearch(e.currentTarget.value)}
              />
            )}
          </CheckedField>
          <button type="submit" class="secondary">
            Find
          </button>
          {externalId && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setSearch('');
                setExternalId('');
              }}
            >
              Show all
            </button>
          )}
        </form>
        {can('identities:create') && (
          <button type="button" class="toolbar-action" onClick={() => setCreating(true)}>
            Create identity
          </button>
        )}
      </div>
      <Table
        caption="Identities"
        rows={identities.items}
        rowKey={(identity) => identity.id}
        paged={identities}
        empty={externalId ? `No identity has the external ID “${externalId}”.` : 'No identities yet.'}
        columns={[
          {
            header: 'External ID',
            rowHeader: true,
            cell: (identity) => <Link href={`/identities/${identity.id}`}>{identity.external_id}</Link>,
          },
          { header: 'Meta', cell: (identity) => describeMeta(identity.meta) },
          { header: 'Rate limit', cell: (identity) => describeRateLimit(identity.rate_limit) },
          { header: 'Credits', cell: (identity) => describeCredits(identity.credits) },
          { header: 'Keys', cell: (identity) => identity.key_count },
          { header: 'Created', cell: (identity) => <When at={identity.created_at} /> },
        ]}
      />
      {creating && (
        <CreateIdentityDialog
          onClose={() => setCreating(false)}
          onCreated={(id) => {
            setCreating(false);
            navigate(`/identities/${id}`);
          }}
        />
      )}
    </Page>
  );
}

function CreateIdentityDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (id: string) => void;
}) {
  const { form, set, errors, setErrors } = useIdentityForm(EMPTY_IDENTITY_FORM);
  const action = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    let body;
    try {
      const rateLimit = rateLimitOf(form);
      const credits = creditsOf(form);
      const meta = metaOf(form);
      body = {
        external_id: form.external_id,
        ...(rateLimit && { rate_limit: rateLimit }),
        ...(credits && { credits }),
        ...(meta && { meta }),
      };
    } catch (error) {
      if (!(error instanceof FormErrors)) throw error;
      setErrors(error.errors);
      action.clear();
      return;
    }
    let created = '';
    const ok = await action.run(async () => {
      created = (await call(api.POST('/v1/identities', { body }))).id;
    });
    if (ok) onCreated(created);
  };

  // The API's refusals on the fields they concern; the rest (a duplicate external ID) as the problem.
  const shown = { ...fieldErrorsOf(action.problem), ...errors };
  return (
    <Dialog title="Create identity" onClose={onClose} wide>
      <form class="form-grid" onSubmit={(event) => void submit(event)} noValidate>
        <div class="span">
          <CheckedField
            label="External ID"
            error={shown.external_id}
            hint="Your id for the customer, unique in the organization, such as cus_1042."
          >
            {(props) => (
              <input
                {...props}
                required
                maxLength={255}
                value={form.external_id}
                onInput={(event) => set('external_id')(event.currentTarget.value)}
              />
            )}
          </CheckedField>
        </div>
        <fieldset>
          <legend>Rate limit</legend>
          <RateLimitFields form={form} set={set} errors={shown} />
        </fieldset>
        <fieldset>
          <legend>Credits</legend>
          <CreditFields form={form} set={set} errors={shown} />
        </fieldset>
        <fieldset class="span">
          <legend>Meta</legend>
          <MetaField form={form} set={set} errors={shown} />
        </fieldset>
        <div class="span">
          <FormErrorsNote errors={errors} />
          <ProblemNote problem={action.problem} />
          <div class="buttons">
            <button type="button" class="secondary" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" disabled={action.busy} aria-busy={action.busy}>
              Create
            </button>
          </div>
        </div>
      </form>
    </Dialog>
  );
}
