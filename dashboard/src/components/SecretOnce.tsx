import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

/**
 * A secret the server returns exactly once (a new key value, a webhook signing secret). It lives only in
 * the owning component's state: never in the URL, web storage or a log, and gone once the view is left.
 * The `title` must not contain the `label`, so that the label names the field alone.
 */
export function SecretOnce({
  title,
  label,
  value,
  onDone,
  children,
}: {
  title: string;
  label: string;
  value: string;
  onDone?: () => void;
  children?: ComponentChildren;
}) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [status, setStatus] = useState('');

  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, [value]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setStatus('Copied to the clipboard.');
    } catch {
      input.current?.select();
      setStatus('The browser refused the clipboard: the value is selected, copy it with Ctrl+C or ⌘C.');
    }
  };

  return (
    <section class="secret" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <p class="warning" id={`${id}-note`}>
        Copy it now: it will not be shown again.
      </p>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input
          id={id}
          ref={input}
          class="mono"
          readOnly
          value={value}
          aria-describedby={`${id}-note`}
          autoComplete="off"
          spellcheck={false}
        />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p role="status" class="hint">
        {status}
      </p>
      {children}
      {onDone && (
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      )}
    </section>
  );
}
