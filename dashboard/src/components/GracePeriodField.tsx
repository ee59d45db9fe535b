import { useId } from 'preact/hooks';
import { described, FieldError, SelectField, TextField } from './Field';

/** The API's longest grace period: 7 days. */
export const MAX_GRACE_SECONDS = 604_800;

const PRESETS = [
  { choice: 'none', label: 'None', seconds: 0 },
  { choice: '1h', label: '1 hour', seconds: 3_600 },
  { choice: '24h', label: '24 hours', seconds: 86_400 },
  { choice: '7d', label: '7 days', seconds: 604_800 },
] as const;

const UNITS = [
  { value: 'minutes', label: 'minutes', seconds: 60 },
  { value: 'hours', label: 'hours', seconds: 3_600 },
  { value: 'days', label: 'days', seconds: 86_400 },
] as const;

type Unit = (typeof UNITS)[number]['value'];

/** What the person chose: a preset, or a number of a unit typed in. */
export interface GracePeriod {
  choice: (typeof PRESETS)[number]['choice'] | 'custom';
  amount: string;
  unit: Unit;
}

export const NO_GRACE: GracePeriod = { choice: 'none', amount: '', unit: 'hours' };

/** The choice that shows `seconds`: its preset, else the largest unit that divides it. */
export function graceFromSeconds(seconds: number): GracePeriod {
  const preset = PRESETS.find((candidate) => candidate.seconds === seconds);
  if (preset) return { choice: preset.choice, amount: '', unit: 'hours' };
  const unit = [...UNITS].reverse().find((candidate) => seconds % candidate.seconds === 0) ?? UNITS[0];
  const amount = seconds % unit.seconds === 0 ? seconds / unit.seconds : seconds / 60;
  return { choice: 'custom', amount: String(amount), unit: unit.value };
}

/** The grace period in seconds, or an error in words for the field. */
export function graceSeconds(grace: GracePeriod): { seconds: number } | { error: string } {
  const preset = PRESETS.find((candidate) => candidate.choice === grace.choice);
  if (preset) return { seconds: preset.seconds };
  const amount = Number(grace.amount);
  if (grace.amount.trim() === '' || !Number.isFinite(amount) || amount < 0) {
    return { error: 'Enter how long, as a number of minutes, hours or days.' };
  }
  const unit = UNITS.find((candidate) => candidate.value === grace.unit) ?? UNITS[0];
  const seconds = Math.round(amount * unit.seconds);
  if (seconds > MAX_GRACE_SECONDS) return { error: 'A grace period can be at most 7 days.' };
  return { seconds };
}

/**
 * How long an old key value keeps working after a rotation: None, 1 hour, 24 hours or 7 days, or a
 * number with a unit. A radio group (one legend names it) with the typed amount under "Other".
 */
export function GracePeriodField({
  legend = 'Grace period',
  value,
  onValue,
  error,
  hint,
}: {
  legend?: string;
  value: GracePeriod;
  onValue: (value: GracePeriod) => void;
  error?: string;
  hint?: string;
}) {
  const id = useId();
  const name = `grace-${id}`;
  const radio = (choice: GracePeriod['choice'], label: string) => (
    <label class="choice" key={choice}>
      <input
        type="radio"
        name={name}
        value={choice}
        checked={value.choice === choice}
        onChange={() => onValue({ ...value, choice })}
      />{' '}
      {label}
    </label>
  );
  return (
    <fieldset class="grace-period" {...described(id, hint, error)}>
      <legend>{legend}</legend>
      <div class="choices">
        {PRESETS.map((preset) => radio(preset.choice, preset.label))}
        {radio('custom', 'Other')}
      </div>
      {value.choice === 'custom' && (
        <div class="inline-form">
          <TextField
            label="Grace period amount"
            type="number"
            min={0}
            step={1}
            value={value.amount}
            onValue={(amount) => onValue({ ...value, amount })}
          />
          <SelectField
            label="Grace period unit"
            value={value.unit}
            onValue={(unit) => onValue({ ...value, unit: unit as Unit })}
            options={UNITS.map((unit) => ({ value: unit.value, label: unit.label }))}
          />
        </div>
      )}
      <FieldError id={`${id}-error`} error={error} />
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
    </fieldset>
  );
}
