import { useState } from 'preact/hooks';
import { api, call, type ApiKey, type Schemas } from '../api/client';
import { useAction } from '../api/hooks';
import { useCan } from '../permissions';
import { ActionsMenu, type MenuItem } from './ActionsMenu';
import { ConfirmDialog } from './ConfirmDialog';
import { Dialog, DialogButtons } from './Dialog';
import { GracePeriodField, graceSeconds, NO_GRACE, type GracePeriod } from './GracePeriodField';
import { KeyFormDialog, type KeyDefaults } from './KeyForm';
import { ProblemNote, When } from './Page';
import { SecretOnce } from './SecretOnce';

type Rotated = Schemas['CreatedApiKeyResponse'];
type Open = 'edit' | 'rotate' | 'disable' | 'delete' | null;

/**
 * Edit, Rotate, Disable/Enable and Delete for one key, each offered only when the user's permissions
 * allow it and the key's state makes sense of it: nothing changes a revoked key, and only an active key
 * is rotated (a disabled or expired key's new value would not work either). Disable and Delete are
 * confirmed in a dialog. As buttons (a key's page) or as an `Actions` menu (a row of the key table).
 */
export function KeyActions({
  apiKey,
  defaults,
  onChanged,
  onDeleted,
  variant = 'buttons',
  describedBy,
}: {
  apiKey: ApiKey;
  defaults?: KeyDefaults;
  onChanged: () => void;
  onDeleted: () => void;
  variant?: 'buttons' | 'menu';
  /** For the menu: the id of what names the key (its row's name). */
  describedBy?: string;
}) {
  const can = useCan();
  const [open, setOpen] = useState<Open>(null);
  const enable = useAction();
  const close = () => setOpen(null);
  const path = { params: { path: { id: apiKey.id } } };
  const revoked = apiKey.status === 'revoked';

  const items: MenuItem[] = [];
  if (can('api_keys:update') && !revoked) {
    items.push({ label: 'Edit', onSelect: () => setOpen('edit') });
    if (apiKey.status === 'active') items.push({ label: 'Rotate', onSelect: () => setOpen('rotate') });
    if (apiKey.enabled) items.push({ label: 'Disable', onSelect: () => setOpen('disable') });
    else {
      items.push({
        label: 'Enable',
        onSelect: () =>
          void enable.run(async () => {
            await call(api.PATCH('/v1/api-keys/{id}', { ...path, body: { enabled: true } }));
            onChanged();
          }),
      });
    }
  }
  if (can('api_keys:delete'))
    items.push({ label: 'Delete', danger: true, onSelect: () => setOpen('delete') });

  return (
    <div class="actions">
      {variant === 'menu' ? (
        <ActionsMenu items={items} describedBy={describedBy} />
      ) : (
        items.map((item) => (
          <button
            key={item.label}
            type="button"
            class={item.danger ? 'danger' : 'secondary'}
            disabled={item.label === 'Enable' && enable.busy}
            onClick={item.onSelect}
          >
            {item.label}
          </button>
        ))
      )}
      <ProblemNote problem={enable.problem} />
      {open === 'edit' && (
        <KeyFormDialog
          apiKey={apiKey}
          defaults={defaults}
          onClose={close}
          onSaved={() => {
            close();
            onChanged();
          }}
        />
      )}
      {open === 'rotate' && <RotateDialog apiKey={apiKey} onRotated={onChanged} onClose={close} />}
      {open === 'disable' && (
        <ConfirmDialog
          title={`Disable key “${apiKey.name}”?`}
          confirmLabel="Disable"
          confirm={() => call(api.PATCH('/v1/api-keys/{id}', { ...path, body: { enabled: false } }))}
          onDone={() => {
            close();
            onChanged();
          }}
          onClose={close}
        >
          <p>
            Requests made with <code>{apiKey.start}…</code> are refused (401 <code>key_disabled</code>) until
            the key is enabled again. Nothing else about the key changes.
          </p>
        </ConfirmDialog>
      )}
      {open === 'delete' && (
        <ConfirmDialog
          title={`Delete key “${apiKey.name}”?`}
          confirmLabel="Delete"
          confirm={() => call(api.DELETE('/v1/api-keys/{id}', path))}
          onDone={() => {
            close();
            onDeleted();
          }}
          onClose={close}
        >
          <p>
            Requests made with <code>{apiKey.start}…</code> are refused at once. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}

function RotateDialog({
  apiKey,
  onRotated,
  onClose,
}: {
  apiKey: ApiKey;
  onRotated: () => void;
  onClose: () => void;
}) {
  const [grace, setGrace] = useState<GracePeriod>(NO_GRACE);
  const [error, setError] = useState<string | undefined>(undefined);
  const [rotated, setRotated] = useState<Rotated | null>(null);
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    const chosen = graceSeconds(grace);
    if ('error' in chosen) {
      setError(chosen.error);
      return;
    }
    setError(undefined);
    void action.run(async () => {
      setRotated(
        await call(
          api.POST('/v1/api-keys/{id}/rotate', {
            params: { path: { id: apiKey.id } },
            body: { grace_period_seconds: chosen.seconds },
          }),
        ),
      );
      onRotated();
    });
  };

  if (rotated) {
    return (
      <Dialog title={`Key “${apiKey.name}” rotated`} onClose={onClose}>
        <SecretOnce title="Copy the new value" label="New key value" value={rotated.key} onDone={onClose}>
          <dl class="facts">
            <dt>Old value works until</dt>
            <dd>
              <When at={rotated.previous_key_expires_at} fallback="No longer (no grace period)" />
            </dd>
            <dt>Old value last used</dt>
            <dd>
              <When at={rotated.previous_key_last_used_at} fallback="Not since the rotation" />
            </dd>
          </dl>
        </SecretOnce>
      </Dialog>
    );
  }

  return (
    <Dialog title={`Rotate key “${apiKey.name}”`} onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <p>
          A new value replaces the current one. During the grace period both work, so clients can switch over;
          after it the old value is refused.
        </p>
        <GracePeriodField
          value={grace}
          onValue={(value) => {
            setGrace(value);
            setError(undefined);
          }}
          error={error}
          hint="None refuses the old value at once; at most 7 days."
        />
        <ProblemNote problem={action.problem} />
        <DialogButtons submitLabel="Rotate" busy={action.busy} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
