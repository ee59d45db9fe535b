import { useState } from 'preact/hooks';
import { api, call, type ApiKey, type Schemas } from '../api/client';
import { localProblem, useAction } from '../api/hooks';
import { useCan } from '../permissions';
import { Dialog } from './Dialog';
import { TextField } from './Field';
import { ProblemNote, When } from './Page';
import { SecretOnce } from './SecretOnce';
import { ConfirmDialog } from './ConfirmDialog';

type Rotated = Schemas['CreatedApiKeyResponse'];

/** Rotate, Disable/Enable and Delete for one key, each offered only with its permission. */
export function KeyActions({
  apiKey,
  onChanged,
  onDeleted,
}: {
  apiKey: ApiKey;
  onChanged: () => void;
  onDeleted: () => void;
}) {
  const can = useCan();
  const [dialog, setDialog] = useState<'rotate' | 'delete' | null>(null);
  const toggle = useAction();
  const path = { params: { path: { id: apiKey.id } } };

  const setEnabled = (enabled: boolean) =>
    toggle.run(async () => {
      await call(api.PATCH('/v1/api-keys/{id}', { ...path, body: { enabled } }));
      onChanged();
    });

  return (
    <div class="actions">
      {can('api_keys:update') && (
        <>
          <button type="button" class="secondary" onClick={() => setDialog('rotate')}>
            Rotate
          </button>
          <button
            type="button"
            class="secondary"
            disabled={toggle.busy}
            onClick={() => void setEnabled(!apiKey.enabled)}
          >
            {apiKey.enabled ? 'Disable' : 'Enable'}
          </button>
        </>
      )}
      {can('api_keys:delete') && (
        <button type="button" class="danger" onClick={() => setDialog('delete')}>
          Delete
        </button>
      )}
      <ProblemNote problem={toggle.problem} />
      {dialog === 'rotate' && (
        <RotateDialog apiKey={apiKey} onRotated={onChanged} onClose={() => setDialog(null)} />
      )}
      {dialog === 'delete' && (
        <DeleteDialog apiKey={apiKey} onDeleted={onDeleted} onClose={() => setDialog(null)} />
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
  const [grace, setGrace] = useState('0');
  const [rotated, setRotated] = useState<Rotated | null>(null);
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const seconds = Number(grace);
      if (!Number.isInteger(seconds) || seconds < 0 || seconds > 604800) {
        throw localProblem('Grace period (seconds) must be a whole number from 0 to 604800 (7 days).');
      }
      setRotated(
        await call(
          api.POST('/v1/api-keys/{id}/rotate', {
            params: { path: { id: apiKey.id } },
            body: { grace_period_seconds: seconds },
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
      <form onSubmit={submit}>
        <p>
          A new value replaces the current one. During the grace period both work, so clients can switch over;
          after it the old value is refused.
        </p>
        <TextField
          label="Grace period (seconds)"
          type="number"
          min={0}
          max={604800}
          step={1}
          required
          value={grace}
          onValue={setGrace}
          hint="0 refuses the old value at once; at most 604800 (7 days)."
        />
        <ProblemNote problem={action.problem} />
        <div class="buttons">
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy} aria-busy={action.busy}>
            Rotate
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteDialog({
  apiKey,
  onDeleted,
  onClose,
}: {
  apiKey: ApiKey;
  onDeleted: () => void;
  onClose: () => void;
}) {
  return (
    <ConfirmDialog
      title={`Delete key “${apiKey.name}”?`}
      confirmLabel="Delete"
      confirm={() => call(api.DELETE('/v1/api-keys/{id}', { params: { path: { id: apiKey.id } } }))}
      onDone={() => {
        onClose();
        onDeleted();
      }}
      onClose={onClose}
    >
      <p>
        Requests made with <code>{apiKey.start}…</code> are refused at once. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
