import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { usePaged } from '../api/hooks';
import { Dialog, DialogButtons } from '../components/Dialog';
import {
  CheckedField,
  creditsOf,
  CreditFields,
  describeCredits,
  describeMeta,
  describeRateLimit,
  EMPTY_IDENTITY_FORM,
  FormErrorsNote,
  metaOf,
  MetaField,
  rateLimitOf,
  RateLimitFields,
  useIdentityForm,
} from '../components/IdentityFields';
import { Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { CreateButton } from '../components/Toolbar';
import { Link, navigate } from '../router';

export function Identities() {
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
        <CreateButton
          permission="identities:create"
          label="Create identity"
          onClick={() => setCreating(true)}
        />
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
          { header: 'Meta', fold: true, cell: (identity) => describeMeta(identity.meta) },
          { header: 'Rate limit', fold: true, cell: (identity) => describeRateLimit(identity.rate_limit) },
          { header: 'Credits', cell: (identity) => describeCredits(identity.credits) },
          { header: 'Keys', fold: true, cell: (identity) => identity.key_count },
          { header: 'Created', fold: true, cell: (identity) => <When at={identity.created_at} /> },
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
  // The API's refusals show on the fields they concern; the rest (a duplicate external ID) as the problem.
  const { form, set, errors, ownErrors, action, submit } = useIdentityForm(
    EMPTY_IDENTITY_FORM,
    (values) => {
      const rateLimit = rateLimitOf(values);
      const credits = creditsOf(values);
      const meta = metaOf(values);
      return {
        external_id: values.external_id,
        ...(rateLimit && { rate_limit: rateLimit }),
        ...(credits && { credits }),
        ...(meta && { meta }),
      };
    },
    (body) => call(api.POST('/v1/identities', { body })),
    (created) => onCreated(created.id),
  );

  return (
    <Dialog title="Create identity" onClose={onClose} wide>
      <form class="form-grid" onSubmit={(event) => void submit(event)} noValidate>
        <div class="span">
          <CheckedField
            label="External ID"
            error={errors.external_id}
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
          <RateLimitFields form={form} set={set} errors={errors} />
        </fieldset>
        <fieldset>
          <legend>Credits</legend>
          <CreditFields form={form} set={set} errors={errors} />
        </fieldset>
        <fieldset class="span">
          <legend>Meta</legend>
          <MetaField form={form} set={set} errors={errors} />
        </fieldset>
        <div class="span">
          <FormErrorsNote errors={ownErrors} />
          <ProblemNote problem={action.problem} />
          <DialogButtons submitLabel="Create" busy={action.busy} onCancel={onClose} />
        </div>
      </form>
    </Dialog>
  );
}
