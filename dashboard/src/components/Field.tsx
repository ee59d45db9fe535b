/** Form controls, each with a real <label for> and an optional hint read out with it. */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

interface Common {
  label: string;
  hint?: ComponentChildren;
}

function Hint({ id, hint }: { id: string; hint?: ComponentChildren }) {
  return hint ? (
    <p class="hint" id={id}>
      {hint}
    </p>
  ) : null;
}

interface InputProps {
  type?: 'text' | 'email' | 'password' | 'number' | 'url' | 'datetime-local';
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
        aria-describedby={hint ? `${id}-hint` : undefined}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

export function TextAreaField({
  label,
  hint,
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
        aria-describedby={hint ? `${id}-hint` : undefined}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
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
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => onValue(event.currentTarget.value)}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

export function CheckboxField({
  label,
  hint,
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
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => onChecked(event.currentTarget.checked)}
      />
      <label for={id}>{label}</label>
      <Hint id={`${id}-hint`} hint={hint} />
    </div>
  );
}

/** The options of a select, from plain values. */
export const options = (values: readonly string[]): Option[] =>
  values.map((value) => ({ value, label: value }));
