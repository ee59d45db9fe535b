import { useState } from 'preact/hooks';
import { api, call, type Schemas, type Webhook, type WebhookEvent } from '../api/client';
import { localProblem, useAction, useLoad, usePaged } from '../api/hooks';
import { webhookEventTypes } from '../api/vocabulary';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog, DialogButtons, useDialogs } from '../components/Dialog';
import { CheckboxField, TextField } from '../components/Field';
import { Page, ProblemNote, When } from '../components/Page';
import { SecretOnce } from '../components/SecretOnce';
import { Table } from '../components/Table';
import { CreateToolbar } from '../components/Toolbar';
import { useCan } from '../permissions';
import { Link } from '../router';

type Created = Schemas['WebhookWithSecretResponse'];

export function Webhooks() {
  const hooks = usePaged((cursor) => call(api.GET('/v1/webhooks', { params: { query: { cursor } } })), []);
  const { dialog, open, close, done } = useDialogs<{ kind: 'create' } | { kind: 'delete'; hook: Webhook }>(
    hooks.reload,
  );
  // The signing secret: in this component's state only, gone when the user leaves the page.
  const [created, setCreated] = useState<Created | null>(null);

  return (
    <Page title="Webhooks">
      <p class="lead">
        Endpoints that receive your organization's events, signed the Standard Webhooks way. A signing secret
        is shown once, when the endpoint is created.
      </p>
      {created && (
        <SecretOnce
          title="Endpoint created"
          label="Signing secret"
          value={created.secret}
          onDone={() => setCreated(null)}
        >
          <p>
            Verify the <code>webhook-signature</code> of deliveries to <code>{created.url}</code> with it.
          </p>
        </SecretOnce>
      )}
      <CreateToolbar
        permission="webhooks:create"
        label="Create webhook"
        onClick={() => open({ kind: 'create' })}
      />
      <Table
        caption="Webhook endpoints"
        rows={hooks.items}
        rowKey={(hook) => hook.id}
        paged={hooks}
        empty="No webhook endpoints yet."
        columns={[
          { header: 'URL', rowHeader: true, cell: (hook) => <span class="break">{hook.url}</span> },
          { header: 'Description', fold: true, cell: (hook) => hook.description || '—' },
          {
            header: 'Events',
            fold: true,
            cell: (hook) => <span class="details">{hook.events.join(', ')}</span>,
          },
          {
            header: 'Status',
            cell: (hook) =>
              hook.enabled ? (
                <span class="badge active">enabled</span>
              ) : (
                <span class="badge disabled" title={hook.disabled_reason ?? undefined}>
                  disabled
                </span>
              ),
          },
          { header: 'Created', fold: true, cell: (hook) => <When at={hook.created_at} /> },
          {
            header: 'Actions',
            cell: (hook) => (
              <WebhookActions
                hook={hook}
                onChanged={hooks.reload}
                onDelete={() => open({ kind: 'delete', hook })}
              />
            ),
          },
        ]}
      />
      {dialog?.kind === 'create' && (
        <CreateWebhookDialog
          onClose={close}
          onCreated={(hook) => {
            setCreated(hook);
            done();
          }}
        />
      )}
      {dialog?.kind === 'delete' && (
        <ConfirmDialog
          title="Delete this webhook endpoint?"
          confirmLabel="Delete"
          confirm={() => call(api.DELETE('/v1/webhooks/{id}', { params: { path: { id: dialog.hook.id } } }))}
          onDone={done}
          onClose={close}
        >
          <p>
            <code class="break">{dialog.hook.url}</code> receives no more events. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </Page>
  );
}

function WebhookActions({
  hook,
  onChanged,
  onDelete,
}: {
  hook: Webhook;
  onChanged: () => void;
  onDelete: () => void;
}) {
  const can = useCan();
  const action = useAction();
  const setEnabled = (enabled: boolean) =>
    action.run(async () => {
      await call(api.PATCH('/v1/webhooks/{id}', { params: { path: { id: hook.id } }, body: { enabled } }));
      onChanged();
    });
  return (
    <div class="actions">
      <Link href={`/webhooks/${hook.id}`} class="button-link secondary">
        Deliveries
      </Link>
      {can('webhooks:update') && (
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() => void setEnabled(!hook.enabled)}
        >
          {hook.enabled ? 'Disable' : 'Enable'}
        </button>
      )}
      {can('webhooks:delete') && (
        <button type="button" class="danger" onClick={onDelete}>
          Delete
        </button>
      )}
      <ProblemNote problem={action.problem} />
    </div>
  );
}

function CreateWebhookDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (hook: Created) => void;
}) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<WebhookEvent[]>([]);
  const action = useAction();
  // The server's event types (an extension's among them), not a list kept here.
  const offered = useLoad(webhookEventTypes, []);
  const eventTypes = offered.data ?? [];

  const toggle = (event: WebhookEvent, on: boolean) =>
    setEvents((current) => eventTypes.filter((e) => (e === event ? on : current.includes(e))));

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      if (!events.length) throw localProblem('Choose at least one event.');
      onCreated(
        await call(
          api.POST('/v1/webhooks', {
            body: { url, events, description: description.trim() ? description : undefined },
          }),
        ),
      );
    });
  };

  return (
    <Dialog title="Create a webhook endpoint" onClose={onClose}>
      <form onSubmit={submit}>
        <TextField
          label="URL"
          type="url"
          required
          placeholder="https://hooks.example.com/gatehouse"
          value={url}
          onValue={setUrl}
        />
        <TextField label="Description" maxLength={500} value={description} onValue={setDescription} />
        <fieldset>
          <legend>Events</legend>
          <div class="checkbox-grid">
            {eventTypes.map((name) => (
              <CheckboxField
                key={name}
                label={name}
                checked={events.includes(name)}
                onChecked={(on) => toggle(name, on)}
              />
            ))}
          </div>
        </fieldset>
        <ProblemNote problem={offered.problem ?? action.problem} />
        <DialogButtons submitLabel="Create" busy={action.busy} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
