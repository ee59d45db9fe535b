import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

/**
 * A modal <dialog>: mounted means open. The browser moves focus into it, traps it and closes on Escape;
 * on close focus goes back to the control that opened it (or to the page when that control is gone).
 */
export function Dialog({
  title,
  onClose,
  children,
  wide = false,
}: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();

  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const dialog = ref.current;
    dialog?.showModal();
    return () => {
      // Close first: while the modal is open everything behind it is inert and cannot take focus.
      dialog?.close();
      if (opener?.isConnected) opener.focus();
      else document.querySelector<HTMLElement>('main')?.focus();
    };
  }, []);

  return (
    <dialog
      ref={ref}
      class={wide ? 'dialog wide' : 'dialog'}
      aria-labelledby={titleId}
      onCancel={(event) => {
        // Escape: let the owner unmount the dialog, so its state goes with it.
        event.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/** A form dialog's `Cancel` and its submit button, which says busy while the form's call runs. */
export function DialogButtons({
  submitLabel,
  busy,
  onCancel,
}: {
  submitLabel: string;
  busy: boolean;
  onCancel: () => void;
}) {
  return (
    <div class="buttons">
      <button type="button" class="secondary" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" disabled={busy} aria-busy={busy}>
        {submitLabel}
      </button>
    </div>
  );
}

/**
 * Which dialog of a list page is open, if any. `done` is for a dialog whose action changed the list: it
 * closes the dialog and loads the list again.
 */
export function useDialogs<D>(reload: () => void) {
  const [dialog, setDialog] = useState<D | null>(null);
  return {
    dialog,
    open: setDialog,
    close: () => setDialog(null),
    done: () => {
      setDialog(null);
      reload();
    },
  };
}
