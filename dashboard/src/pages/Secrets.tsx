import { useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { useAction, usePaged } from '../api/hooks';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog, DialogButtons, useDialogs } from '../components/Dialog';
import { CheckedField } from '../components/IdentityFields';
import { Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { CreateButton } from '../components/Toolbar';
import { useCan } from '../permissions';

type Secret = Schemas['OrganizationSecretResponse'];

/**
 * Organization secrets (CONTRACT, "Model agents and provider secrets"): values agents send upstream,
 * write-only. A value is typed once, into a password field that is cleared with its dialog, and is never
 * shown again: the list shows the name and the last four characters. Renaming and replacing are separate
 * dialogs so that a rename never asks for (or resends) the value.
 */
export function Secrets() {
  const can = useCan();
  const secrets = usePaged((cursor) => call(api.GET('/v1/secrets', { params: { query: { cursor } } })), []);
  const [creating, setCreating] = useState(false);
  const { dialog, open, close, done } = useDialogs<{ kind: 'rename' | 'replace' | 'delete'; secret: Secret }>(
    secrets.reload,
  );

  return (
    <Page title="Secrets">
      <p class="lead">
        Values your agents send upstream, such as a model provider's API key. A value is written once and
        never shown again, here or by the API.
      </p>
      <div class="toolbar">
        <CreateButton permission="secrets:create" label="Create secret" onClick={() => setCreating(true)} />
      </div>
      <Table
        caption="Secrets"
        rows={secrets.items}
        rowKey={(secret) => secret.id}
        paged={secrets}
        empty="No secrets yet."
        columns={[
          { header: 'Name', rowHeader: true, cell: (secret) => secret.name },
          {
            header: 'Ends with',
            fold: true,
            cell: (secret) => (secret.last4 ? <code>…{secret.last4}</code> : '—'),
          },
          { header: 'Updated', fold: true, cell: (secret) => <When at={secret.updated_at} compact /> },
          {
            header: 'Last used',
            fold: true,
            cell: (secret) => <When at={secret.last_used_at} fallback="Never" compact />,
          },
          {
            header: 'Actions',
            cell: (secret) => (
              <span class="buttons inline">
                {can('secrets:update') && (
                  <>
                    <button type="button" class="secondary" onClick={() => open({ kind: 'rename', secret })}>
                      Rename
                    </button>
                    <button type="button" class="secondary" onClick={() => open({ kind: 'replace', secret })}>
                      Replace value
                    </button>
                  </>
                )}
                {can('secrets:delete') && (
                  <button type="button" class="danger" onClick={() => open({ kind: 'delete', secret })}>
                    Delete
                  </button>
                )}
              </span>
            ),
          },
        ]}
      />
      {creating && (
        <SecretDialog
          title="Create secret"
          submitLabel="Create"
          fields={{ name: '', value: '' }}
          save={(body) => call(api.POST('/v1/secrets', { body: { name: body.name!, value: body.value! } }))}
          onClose={() => setCreating(false)}
          onSaved={() => {
            setCreating(false);
            secrets.reload();
          }}
        />
      )}
      {dialog?.kind === 'rename' && (
        <SecretDialog
          title={`Rename ${dialog.secret.name}`}
          submitLabel="Rename"
          fields={{ name: dialog.secret.name }}
          save={(body) => patch(dialog.secret.id, { name: body.name })}
          onClose={close}
          onSaved={done}
        />
      )}
      {dialog?.kind === 'replace' && (
        <SecretDialog
          title={`Replace the value of ${dialog.secret.name}`}
          submitLabel="Replace"
          fields={{ value: '' }}
          save={(body) => patch(dialog.secret.id, { value: body.value })}
          onClose={close}
          onSaved={done}
        />
      )}
      {dialog?.kind === 'delete' && (
        <ConfirmDialog
          title={`Delete ${dialog.secret.name}?`}
          confirmLabel="Delete"
          confirm={() => call(api.DELETE('/v1/secrets/{id}', { params: { path: { id: dialog.secret.id } } }))}
          onDone={done}
          onClose={close}
        >
          <p>The value is gone for good. A secret an agent still names cannot be deleted.</p>
        </ConfirmDialog>
      )}
    </Page>
  );
}

const patch = (id: string, body: { name?: string; value?: string }) =>
  call(api.PATCH('/v1/secrets/{id}', { params: { path: { id } }, body }));

/** The name and/or the value (whichever `fields` holds), saved with `save`; the value field is write-only. */
function SecretDialog({
  title,
  submitLabel,
  fields,
  save,
  onClose,
  onSaved,
}: {
  title: string;
  submitLabel: string;
  fields: { name?: string; value?: string };
  save: (body: { name?: string; value?: string }) => Promise<unknown>;
  onClose: () => void;
  onSaved: () => void;
}) {
  const [form, setForm] = useState(fields);
  const action = useAction();
  return (
    <Dialog title={title} onClose={onClose}>
      <form
        class="form-grid"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(() => save(form)).then((saved) => saved && onSaved());
        }}
      >
        {form.name !== undefined && (
          <div class="span">
            <CheckedField label="Name" hint="Unique in the organization, such as openai-production.">
              {(props) => (
                <input
                  {...props}
                  required
                  maxLength={100}
                  value={form.name}
                  onInput={(event) => setForm({ ...form, name: event.currentTarget.value })}
                />
              )}
            </CheckedField>
          </div>
        )}
        {form.value !== undefined && (
          <div class="span">
            <CheckedField label="Value" hint="Shown nowhere once saved, not even here.">
              {(props) => (
                <input
                  {...props}
                  type="password"
                  autocomplete="off"
                  required
                  maxLength={8192}
                  value={form.value}
                  onInput={(event) => setForm({ ...form, value: event.currentTarget.value })}
                />
              )}
            </CheckedField>
          </div>
        )}
        <div class="span">
          <ProblemNote problem={action.problem} />
          <DialogButtons submitLabel={submitLabel} busy={action.busy} onCancel={onClose} />
        </div>
      </form>
    </Dialog>
  );
}
