import type { ComponentChildren } from 'preact';
import { useAction } from '../api/hooks';
import { Dialog } from './Dialog';
import { ProblemNote } from './Page';

/**
 * A destructive action asked once more: the message, `Cancel`, and the confirming button (named after
 * the action: `Delete`, `Deactivate`). The API's refusal stays in the dialog as its problem detail;
 * `onDone` runs only once the call succeeded.
 */
export function ConfirmDialog({
  title,
  confirmLabel,
  confirm,
  onDone,
  onClose,
  children,
}: {
  title: string;
  confirmLabel: string;
  /** The API call; it throws the problem when refused. */
  confirm: () => Promise<unknown>;
  onDone: () => void;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const action = useAction();
  const run = async () => {
    if (await action.run(confirm)) onDone();
  };
  return (
    <Dialog title={title} onClose={onClose}>
      {children}
      <ProblemNote problem={action.problem} />
      <div class="buttons">
        <button type="button" class="secondary" onClick={onClose}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void run()}>
          {confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}
