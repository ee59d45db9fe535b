/**
 * Form controls, each with a real <label for>, an optional hint read out with it, and an optional error
 * shown beside the control (marked aria-invalid and read out with it).
 */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

interface Common {
  label: string;
  hint?: ComponentChildren;
  /** What is wrong with the value, in words; shown beside the control. */
  error?: string;
}

function Hint({ id, hint }: { id: string; hint?: ComponentChildren }) {
  return hint ? (
    <p class="hint" id={id}>
      {hint}
    </p>
  ) : null;
}

export function FieldError({ id, error }: { id: string; error?: string }) {
  return error ? (
    <p class="field-error" id={id}>
      {error}
    </p>
  ) : null;
}

/** The control's aria-describedby and aria-invalid: its error first, then its hint. */
export function described(id: string, hint: ComponentChildren | undefined, error: string | undefined) {
  const ids = [error ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return { 'aria-describedby': ids || undefined, 'aria-invalid': error ? ('true' as const) : undefined };
}

interface InputProps {
  type?: 'text' | 'email' | 'password' | 'number' | 'url' | 'datetime-local' | 'search';
  required?: boolean;
  min?: number;
  max?: number;
  step?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  placeholder?: string;
  autoComplete?: string;
}

export function TextField({
  label,
  hint,
  error,
  value,
  onValue,
  type = 'text',
  ...input
}: Common & InputProps & { value: string; onValue: (value: string) => void }) {
  const id = useId();
  // Preact types <input> as a union keyed by a literal `type`; this one component serves several text-like
  // types, all of which take the same attributes.
  const typed = { type } as { type: 'text' };
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        {...input}
        {...typed}
        id={id}
        value={value}
        {...described(id, hint, error)}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <FieldError id={`${id}-error`} error={error} />
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

export function TextAreaField({
  label,
  hint,
  error,
  value,
  onValue,
  rows = 3,
  spellcheck = false,
}: Common & { value: string; onValue: (value: string) => void; rows?: number; spellcheck?: boolean }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        rows={rows}
        value={value}
        spellcheck={spellcheck}
        {...described(id, hint, error)}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <FieldError id={`${id}-error`} error={error} />
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

export interface Option {
  value: string;
  label: string;
}

export function SelectField({
  label,
  hint,
  error,
  value,
  onValue,
  options,
  required,
  hideLabel = false,
}: Common & {
  value: string;
  onValue: (value: string) => void;
  options: Option[];
  required?: boolean;
  /** For a select whose purpose its row or column already shows; the label is still read out. */
  hideLabel?: boolean;
}) {
  const id = useId();
  return (
    <div class="field">
      <label for={id} class={hideLabel ? 'visually-hidden' : undefined}>
        {label}
      </label>
      <select
        id={id}
        value={value}
        required={required}
        {...described(id, hint, error)}
        onChange={(event) => onValue(event.currentTarget.value)}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldError id={`${id}-error`} error={error} />
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

export function CheckboxField({
  label,
  hint,
  error,
  checked,
  onChecked,
}: Common & { checked: boolean; onChecked: (checked: boolean) => void }) {
  const id = useId();
  return (
    <div class="field checkbox">
      <input
        type="checkbox"
        id={id}
        checked={checked}
        {...described(id, hint, error)}
        onChange={(event) => onChecked(event.currentTarget.checked)}
      />
      <label for={id}>{label}</label>
      <FieldError id={`${id}-error`} error={error} />
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

/** The options of a select, from plain values. */
export const options = (values: readonly string[]): Option[] =>
  values.map((value) => ({ value, label: value }));
