/**
 * The settings an identity carries (rate limit, credits, meta) as form fields, their parsing into the
 * API's body, and errors shown on the field they concern, whether the form or the API found them.
 */
import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import type { Schemas } from '../api/client';
import { useAction } from '../api/hooks';
import type { ProblemDetails } from '../api/session';

export type Identity = Schemas['IdentityResponse'];
type RateLimit = Schemas['RateLimitDto'];
type Credits = Schemas['CreditsDto'];

export type Refill = 'none' | 'daily' | 'monthly';

export interface IdentityForm {
  external_id: string;
  per_minute: string;
  per_hour: string;
  credits: string;
  refill: Refill;
  refill_amount: string;
  meta: string;
}

export type FormField = keyof IdentityForm;
export type FieldErrors = Partial<Record<FormField, string>>;

export const EMPTY_IDENTITY_FORM: IdentityForm = {
  external_id: '',
  per_minute: '',
  per_hour: '',
  credits: '',
  refill: 'none',
  refill_amount: '',
  meta: '',
};

/** The form as the identity is now, for editing it. */
export function formOf(identity: Identity): IdentityForm {
  const text = (value: number | null | undefined) =>
    value === null || value === undefined ? '' : String(value);
  return {
    external_id: identity.external_id,
    per_minute: text(identity.rate_limit.requests_per_minute),
    per_hour: text(identity.rate_limit.requests_per_hour),
    credits: text(identity.credits?.remaining),
    refill: (identity.credits?.refill?.interval as Refill | undefined) ?? 'none',
    refill_amount: text(identity.credits?.refill?.amount),
    meta: Object.keys(identity.meta).length ? JSON.stringify(identity.meta, null, 2) : '',
  };
}

/** What the form could not send, by field; thrown by the parsers below. */
export class FormErrors extends Error {
  constructor(readonly errors: FieldErrors) {
    super(Object.values(errors).join(' '));
  }
}

function wholeNumber(field: FormField, label: string, text: string, min: number, errors: FieldErrors) {
  if (text.trim() === '') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    errors[field] = `${label} must be a whole number of at least ${min}.`;
    return undefined;
  }
  return value;
}

/** Empty fields: no identity-level limit (null). */
export function rateLimitOf(form: IdentityForm): RateLimit | null {
  const errors: FieldErrors = {};
  const perMinute = wholeNumber('per_minute', 'Requests per minute', form.per_minute, 1, errors);
  const perHour = wholeNumber('per_hour', 'Requests per hour', form.per_hour, 1, errors);
  if (Object.keys(errors).length) throw new FormErrors(errors);
  if (perMinute === undefined && perHour === undefined) return null;
  return { requests_per_minute: perMinute, requests_per_hour: perHour };
}

/** Empty Credits: no identity budget (null). */
export function creditsOf(form: IdentityForm): Credits | null {
  const errors: FieldErrors = {};
  const remaining = wholeNumber('credits', 'Credits', form.credits, 0, errors);
  const amount =
    form.refill === 'none'
      ? undefined
      : wholeNumber('refill_amount', 'Refill amount', form.refill_amount, 1, errors);
  if (form.refill !== 'none' && amount === undefined && !errors.refill_amount) {
    errors.refill_amount = 'Set the Refill amount to refill the credits.';
  }
  if (form.refill !== 'none' && remaining === undefined && !errors.credits) {
    errors.credits = 'Set Credits (the balance now) to use a refill.';
  }
  if (Object.keys(errors).length) throw new FormErrors(errors);
  if (remaining === undefined) return null;
  return {
    remaining,
    refill: form.refill === 'none' || amount === undefined ? null : { interval: form.refill, amount },
  };
}

/** Empty: no meta (null clears it on PATCH). Invalid JSON is said so in words, on the field. */
export function metaOf(form: IdentityForm): Record<string, unknown> | null {
  if (!form.meta.trim()) return null;
  let meta: unknown;
  try {
    meta = JSON.parse(form.meta);
  } catch (error) {
    // The parser's own message names the position ("Unexpected token } in JSON at position 12").
    const why = error instanceof SyntaxError ? ` ${error.message}.` : '';
    throw new FormErrors({ meta: `Meta is not valid JSON.${why}` });
  }
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) {
    throw new FormErrors({ meta: 'Meta must be a JSON object, such as {"plan": "pro"}.' });
  }
  return meta as Record<string, unknown>;
}

/** The API's field errors (`rate_limit.requests_per_minute`, `meta`, …) on the form's fields. */
export function fieldErrorsOf(problem: ProblemDetails | null): FieldErrors {
  const errors: FieldErrors = {};
  for (const { field, message } of problem?.errors ?? []) {
    const target = FIELD_OF_API[field] ?? FIELD_OF_API[field.split('.')[0]];
    if (target && !errors[target]) errors[target] = message;
  }
  return errors;
}

const FIELD_OF_API: Record<string, FormField | undefined> = {
  external_id: 'external_id',
  meta: 'meta',
  'rate_limit.requests_per_minute': 'per_minute',
  'rate_limit.requests_per_hour': 'per_hour',
  rate_limit: 'per_minute',
  'credits.remaining': 'credits',
  'credits.refill.interval': 'refill',
  'credits.refill.amount': 'refill_amount',
  'credits.refill': 'refill',
  credits: 'credits',
};

/** One labelled control with its hint and, when there is one, its error (announced with it). */
export function CheckedField({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: ComponentChildren;
  error?: string;
  children: (props: {
    id: string;
    'aria-describedby'?: string;
    'aria-invalid'?: 'true';
  }) => ComponentChildren;
}) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>{label}</label>
      {children({
        id,
        'aria-describedby': described || undefined,
        'aria-invalid': error ? 'true' : undefined,
      })}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

type Setter = <F extends FormField>(field: F) => (value: IdentityForm[F]) => void;

/**
 * An identity form: its values, the errors shown on its fields and a submit that sends what `bodyOf`
 * makes of the form. `set(field)` changes a value and clears that field's error. A form its parsers
 * refuse sends nothing and keeps their errors (`ownErrors`); the API's refusals show on the fields they
 * concern. The create dialog and each form of an identity's page use it.
 */
export function useIdentityForm<Body, Sent>(
  initial: IdentityForm | (() => IdentityForm),
  bodyOf: (form: IdentityForm) => Body,
  send: (body: Body) => Promise<Sent>,
  onSent: (sent: Sent) => void,
) {
  const [form, setForm] = useState<IdentityForm>(initial);
  const [errors, setErrors] = useState<FieldErrors>({});
  const action = useAction();
  const set: Setter = (field) => (value) => {
    setForm((previous) => ({ ...previous, [field]: value }));
    setErrors((previous) => ({ ...previous, [field]: undefined }));
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    let body: Body;
    try {
      body = bodyOf(form);
    } catch (error) {
      if (!(error instanceof FormErrors)) throw error;
      setErrors(error.errors);
      action.clear();
      return;
    }
    setErrors({});
    let sent: Sent | undefined;
    const ok = await action.run(async () => {
      sent = await send(body);
    });
    if (ok) onSent(sent as Sent);
  };
  return {
    form,
    set,
    errors: { ...fieldErrorsOf(action.problem), ...errors },
    ownErrors: errors,
    action,
    submit,
  };
}

/** What every group of fields below is given: the form's values, its setter and the errors to show. */
interface FieldsProps {
  form: IdentityForm;
  set: Setter;
  errors: FieldErrors;
}

function NumberInput({
  form,
  set,
  errors,
  field,
  label,
  min,
  hint,
}: FieldsProps & {
  field: 'per_minute' | 'per_hour' | 'credits' | 'refill_amount';
  label: string;
  min: number;
  hint?: string;
}) {
  return (
    <CheckedField label={label} hint={hint} error={errors[field]}>
      {(props) => (
        <input
          {...props}
          type="number"
          inputMode="numeric"
          min={min}
          value={form[field]}
          onInput={(event) => set(field)(event.currentTarget.value)}
        />
      )}
    </CheckedField>
  );
}

export function RateLimitFields(fields: FieldsProps) {
  return (
    <>
      <NumberInput
        {...fields}
        field="per_minute"
        label="Requests per minute"
        min={1}
        hint="Shared by all the identity's keys, beside each key's own. Empty: no limit."
      />
      <NumberInput {...fields} field="per_hour" label="Requests per hour" min={1} hint="Empty: no limit." />
    </>
  );
}

export function CreditFields(fields: FieldsProps) {
  const { form, set, errors } = fields;
  return (
    <>
      <NumberInput
        {...fields}
        field="credits"
        label="Credits"
        min={0}
        hint="The balance all the identity's keys spend from. Empty: no identity budget."
      />
      <CheckedField label="Refill" error={errors.refill}>
        {(props) => (
          <select
            {...props}
            value={form.refill}
            onChange={(event) => set('refill')(event.currentTarget.value as Refill)}
          >
            <option value="none">none</option>
            <option value="daily">daily</option>
            <option value="monthly">monthly</option>
          </select>
        )}
      </CheckedField>
      <NumberInput
        {...fields}
        field="refill_amount"
        label="Refill amount"
        min={1}
        hint="Credits are set to this at 00:00 UTC daily, or on the 1st of the month."
      />
    </>
  );
}

export function MetaField({ form, set, errors }: FieldsProps) {
  return (
    <CheckedField
      label="Meta (JSON)"
      error={errors.meta}
      hint='Your own data about the customer, a JSON object of at most 4 KiB, such as {"plan": "pro"}. Never a secret.'
    >
      {(props) => (
        <textarea
          {...props}
          rows={5}
          spellcheck={false}
          value={form.meta}
          onInput={(event) => set('meta')(event.currentTarget.value)}
        />
      )}
    </CheckedField>
  );
}

/** "60 per minute, 1,000 per hour", or "None". */
export function describeRateLimit(limit: Identity['rate_limit']): string {
  const parts = [
    limit.requests_per_minute !== null && `${limit.requests_per_minute.toLocaleString()} per minute`,
    limit.requests_per_hour !== null && `${limit.requests_per_hour.toLocaleString()} per hour`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'None';
}

/** "250 remaining, refilled daily to 1,000", or "No budget". */
export function describeCredits(credits: Identity['credits']): string {
  if (!credits) return 'No budget';
  const refill = credits.refill
    ? `, refilled ${credits.refill.interval} to ${credits.refill.amount.toLocaleString()}`
    : '';
  return `${credits.remaining.toLocaleString()} remaining${refill}`;
}

/** `plan: pro, company: Acme`, cut short for a table cell. */
export function describeMeta(meta: Record<string, unknown>, max = 60): string {
  const text = Object.entries(meta)
    .map(([name, value]) => `${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
  if (!text) return '—';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The form's own refusals, announced once when the user submits (each is also shown on its field). */
export function FormErrorsNote({ errors }: { errors: FieldErrors }) {
  const messages = Object.values(errors).filter(Boolean);
  if (!messages.length) return null;
  return (
    <div class="problem" role="alert">
      <p>Nothing was sent: {messages.join(' ')}</p>
    </div>
  );
}
