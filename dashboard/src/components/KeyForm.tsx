/**
 * The form of a key's settings, for creating a key and for changing one: every field of the API's
 * create body (PATCH takes them all but `type`), client-side checks where they are cheap, and each
 * error, the API's refusals included, shown beside the field it concerns in words a person reads.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, everyPage, type ApiKey, type Schemas } from '../api/client';
import { BUILT_IN_ROLES, useAction, useLoad } from '../api/hooks';
import { ApiError, type ProblemDetails } from '../api/session';
import { useCan, useUser } from '../permissions';
import { Dialog, DialogButtons } from './Dialog';
import { CheckboxField, SelectField, TextAreaField, TextField, options } from './Field';
import {
  GracePeriodField,
  graceFromSeconds,
  graceSeconds,
  NO_GRACE,
  type GracePeriod,
} from './GracePeriodField';
import { ProblemNote } from './Page';

type KeyType = ApiKey['type'];
type CreateBody = Schemas['CreateApiKeyDto'];
type UpdateBody = Schemas['UpdateApiKeyDto'];
type Created = Schemas['CreatedApiKeyResponse'];
export type KeyDefaults = Schemas['ApiKeyDefaultsResponse'];

export const KEY_TYPES: KeyType[] = ['personal', 'team', 'service'];

export interface KeyForm {
  name: string;
  description: string;
  role: string;
  type: KeyType;
  team_id: string;
  identity_id: string;
  expiration: string;
  allowed_ips: string;
  allowed_referrers: string;
  per_minute: string;
  per_hour: string;
  credits: string;
  refill: 'none' | 'daily' | 'monthly';
  refill_amount: string;
  rotate: boolean;
  rotation_days: string;
  grace: GracePeriod;
  hide_credentials: boolean;
  enabled: boolean;
  meta: string;
}

export type FormField = keyof KeyForm;
/** The fields that take any text (not a choice among a few, nor a checkbox). */
type TextKey = { [F in FormField]: string extends KeyForm[F] ? F : never }[FormField];
export type FieldErrors = Partial<Record<FormField, string>>;

export const EMPTY_FORM: KeyForm = {
  name: '',
  description: '',
  role: '',
  type: 'personal',
  team_id: '',
  identity_id: '',
  expiration: '',
  allowed_ips: '',
  allowed_referrers: '',
  per_minute: '',
  per_hour: '',
  credits: '',
  refill: 'none',
  refill_amount: '',
  rotate: false,
  rotation_days: '90',
  grace: NO_GRACE,
  hide_credentials: false,
  enabled: true,
  meta: '',
};

/** An ISO instant as a datetime-local value in this browser's time zone (minutes: what the control shows). */
function localDateTime(iso: string | null): string {
  if (!iso) return '';
  const at = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}` +
    `T${pad(at.getHours())}:${pad(at.getMinutes())}`
  );
}

/** The form showing a key's current settings. */
export function formFromKey(key: ApiKey): KeyForm {
  return {
    name: key.name,
    description: key.description ?? '',
    role: key.role,
    type: key.type,
    team_id: key.team_id ?? '',
    identity_id: key.identity?.id ?? '',
    expiration: localDateTime(key.expiration),
    allowed_ips: key.allowed_ips.join('\n'),
    allowed_referrers: key.allowed_referrers.join('\n'),
    per_minute: key.rate_limit.requests_per_minute?.toString() ?? '',
    per_hour: key.rate_limit.requests_per_hour?.toString() ?? '',
    credits: key.credits ? String(key.credits.remaining) : '',
    refill: key.credits?.refill?.interval ?? 'none',
    refill_amount: key.credits?.refill ? String(key.credits.refill.amount) : '',
    rotate: key.rotation_policy.enabled,
    rotation_days: String(key.rotation_policy.days ?? 90),
    grace: graceFromSeconds(key.rotation_policy.grace_period_seconds),
    hide_credentials: key.hide_credentials,
    enabled: key.enabled,
    meta: Object.keys(key.meta).length ? JSON.stringify(key.meta, null, 2) : '',
  };
}

const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** Every setting of the form as the API takes it (null: cleared), or the errors of the fields. */
export function settingsOf(
  form: KeyForm,
  now = Date.now(),
): { settings: Required<Omit<UpdateBody, 'enabled'>> & { enabled: boolean }; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const whole = (field: FormField, text: string, min: number, what: string): number | null => {
    if (text.trim() === '') return null;
    const value = Number(text);
    if (!Number.isInteger(value) || value < min) {
      errors[field] = `${what} must be a whole number of at least ${min}; “${text.trim()}” is not.`;
      return null;
    }
    return value;
  };

  if (!form.name.trim()) errors.name = 'Give the key a name.';
  if (!form.role) errors.role = 'Choose a role.';
  if (form.type === 'team' && !form.team_id) errors.team_id = 'Choose the team a team key acts for.';

  let expiration: string | null = null;
  if (form.expiration) {
    // datetime-local is the browser's local time; the API takes an ISO 8601 instant.
    const at = new Date(form.expiration);
    if (Number.isNaN(at.getTime())) errors.expiration = 'Enter a valid date and time.';
    else if (at.getTime() <= now) errors.expiration = 'Choose a time in the future, or leave it empty.';
    else expiration = at.toISOString();
  }

  const perMinute = whole('per_minute', form.per_minute, 1, 'Requests per minute');
  const perHour = whole('per_hour', form.per_hour, 1, 'Requests per hour');

  const remaining = whole('credits', form.credits, 0, 'Credits');
  let credits: UpdateBody['credits'] = null;
  if (form.refill !== 'none') {
    const amount = whole('refill_amount', form.refill_amount, 1, 'The refill amount');
    if (form.refill_amount.trim() === '') errors.refill_amount = 'Set how many credits each refill gives.';
    if (form.credits.trim() === '') errors.credits = 'Set the credits remaining to use a refill.';
    if (remaining !== null && amount !== null) {
      credits = { remaining, refill: { interval: form.refill, amount } };
    }
  } else if (remaining !== null) {
    credits = { remaining, refill: null };
  }

  let rotation: UpdateBody['rotation_policy'] = null;
  const grace = graceSeconds(form.grace);
  if (form.rotate) {
    const days = whole('rotation_days', form.rotation_days, 1, 'Rotation days');
    if (form.rotation_days.trim() === '') errors.rotation_days = 'Set how many days apart rotations are.';
    if ('error' in grace) errors.grace = grace.error;
    if (days !== null && 'seconds' in grace) {
      rotation = { enabled: true, days, grace_period_seconds: grace.seconds };
    }
  }

  let meta: Record<string, unknown> | null = null;
  if (form.meta.trim()) {
    try {
      const parsed: unknown = JSON.parse(form.meta);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
        errors.meta = 'Meta must be a JSON object, such as {"plan": "pro"}.';
      } else {
        meta = parsed as Record<string, unknown>;
      }
    } catch {
      errors.meta = 'This is not valid JSON. Check quotes, commas and braces.';
    }
  }

  return {
    settings: {
      name: form.name,
      description: form.description.trim() ? form.description : null,
      role: form.role,
      team_id: form.team_id,
      identity_id: form.identity_id || null,
      expiration,
      allowed_ips: lines(form.allowed_ips),
      allowed_referrers: lines(form.allowed_referrers),
      rate_limit:
        perMinute === null && perHour === null
          ? null
          : {
              ...(perMinute === null ? {} : { requests_per_minute: perMinute }),
              ...(perHour === null ? {} : { requests_per_hour: perHour }),
            },
      credits,
      rotation_policy: rotation,
      hide_credentials: form.hide_credentials,
      enabled: form.enabled,
      meta,
    },
    errors,
  };
}

/** The create body: what the form sets, nothing for what it leaves empty. */
export function createBody(form: KeyForm): { body: CreateBody; errors: FieldErrors } {
  const { settings, errors } = settingsOf(form);
  const body: CreateBody = {
    name: settings.name,
    role: settings.role,
    type: form.type,
    enabled: settings.enabled,
    hide_credentials: settings.hide_credentials,
  };
  if (settings.description) body.description = settings.description;
  if (form.type === 'team') body.team_id = settings.team_id;
  if (settings.identity_id) body.identity_id = settings.identity_id;
  if (settings.expiration) body.expiration = settings.expiration;
  if (settings.allowed_ips.length) body.allowed_ips = settings.allowed_ips;
  if (settings.allowed_referrers.length) body.allowed_referrers = settings.allowed_referrers;
  if (settings.rate_limit) body.rate_limit = settings.rate_limit;
  if (settings.credits) body.credits = settings.credits;
  if (settings.rotation_policy) body.rotation_policy = settings.rotation_policy;
  if (settings.meta) body.meta = settings.meta;
  return { body, errors };
}

/**
 * The PATCH body: only the settings the form changed, compared as the API would receive them (so an
 * untouched expiration, shown to the minute, is not sent back rounded).
 */
export function patchBody(original: KeyForm, form: KeyForm): { body: UpdateBody; errors: FieldErrors } {
  const { settings, errors } = settingsOf(form);
  // The original as it was shown: its expiration may be in the past by now, which is no change.
  const before = settingsOf(original, 0).settings;
  const body: Record<string, unknown> = {};
  for (const field of Object.keys(settings) as (keyof typeof settings)[]) {
    if (field === 'enabled' || (field === 'team_id' && form.type !== 'team')) continue;
    if (JSON.stringify(settings[field]) !== JSON.stringify(before[field])) body[field] = settings[field];
  }
  // An expiration left as shown is no change, even one that has passed since; a new one is checked.
  if (form.expiration === original.expiration) {
    delete body.expiration;
    delete errors.expiration;
  }
  return { body: body as UpdateBody, errors };
}

/** Which form field an API field path (`rate_limit.requests_per_minute`) concerns. */
const FIELD_OF_API: [RegExp, FormField][] = [
  [/^rate_limit\.requests_per_hour/, 'per_hour'],
  [/^rate_limit/, 'per_minute'],
  [/^credits\.refill\.amount/, 'refill_amount'],
  [/^credits\.refill/, 'refill'],
  [/^credits/, 'credits'],
  [/^rotation_policy\.grace_period_seconds/, 'grace'],
  [/^rotation_policy/, 'rotation_days'],
  [
    /^(name|description|role|type|team_id|identity_id|expiration|allowed_ips|allowed_referrers|hide_credentials|enabled|meta)$/,
    'name',
  ],
];

function formFieldOf(apiField: string): FormField | undefined {
  for (const [pattern, field] of FIELD_OF_API) {
    if (!pattern.test(apiField)) continue;
    // The last rule names each top-level field as itself.
    return field === 'name' ? (apiField as FormField) : field;
  }
  return undefined;
}

/** The API's names in a message, as the form labels them. */
const LABEL_OF_API: Record<string, string> = {
  requests_per_minute: 'Requests per minute',
  requests_per_hour: 'Requests per hour',
  grace_period_seconds: 'Grace period (seconds)',
  remaining: 'Credits',
  amount: 'Refill amount',
  interval: 'Refill',
  days: 'Rotation days',
  team_id: 'Team',
  identity_id: 'Identity',
  allowed_ips: 'Allowed IPs',
  allowed_referrers: 'Allowed referrers',
  hide_credentials: 'Hide credentials',
  expiration: 'Expiration',
  description: 'Description',
  meta: 'Meta',
  name: 'Name',
  role: 'Role',
};

/**
 * An API field message as a sentence beside its field: an IP or referrer list names the entries it
 * refused; otherwise the leading field name goes (the label says it) and other API names become labels.
 */
export function readableMessage(apiField: string, message: string): string {
  const refused = /\(refused: (.*)\)$/.exec(message)?.[1];
  if (refused && apiField.startsWith('allowed_ips')) {
    return `Not an IPv4 or IPv6 address or CIDR range (such as 203.0.113.7 or 10.0.0.0/8): ${refused}.`;
  }
  if (refused && apiField.startsWith('allowed_referrers')) {
    return `Not an http(s) URL (optionally ending in /*): ${refused}.`;
  }
  const own = apiField.split('.').pop() ?? apiField;
  let text = message.startsWith(`${apiField} `)
    ? message.slice(apiField.length + 1)
    : message.startsWith(`${own} `)
      ? message.slice(own.length + 1)
      : message;
  text = text.replace(/\b[a-z]+(?:_[a-z]+)+\b|\b(?:remaining|amount|interval|days|meta)\b/g, (word) =>
    word in LABEL_OF_API ? LABEL_OF_API[word] : word,
  );
  text = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** The API's refusal split into errors for fields of the form and the rest (shown under the form). */
export function fieldErrorsFrom(problem: ProblemDetails): {
  fields: FieldErrors;
  rest: ProblemDetails | null;
} {
  const fields: FieldErrors = {};
  const unplaced: { field: string; message: string }[] = [];
  for (const error of problem.errors ?? []) {
    const field = formFieldOf(error.field);
    if (field && !fields[field]) fields[field] = readableMessage(error.field, error.message);
    else if (!field) unplaced.push(error);
  }
  if (!Object.keys(fields).length) return { fields, rest: problem };
  return {
    fields,
    rest: unplaced.length
      ? { ...problem, detail: 'The service refused some settings.', errors: unplaced }
      : null,
  };
}

/**
 * The roles this user may give a key: a key may hold no permission its creator lacks (the API refuses
 * it with 403), so a role that would is not offered. Without roles:read the role list is the built-in
 * names, offered as they are (the API still decides).
 */
function useGrantableRoles(): string[] {
  const can = useCan();
  const user = useUser();
  const roles = useLoad(
    async () =>
      can('roles:read')
        ? everyPage((cursor) => call(api.GET('/v1/roles', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [],
  );
  if (!roles.data) return BUILT_IN_ROLES;
  const held = new Set<string>(user.permissions);
  return roles.data
    .filter((role) =>
      Object.entries(role.permissions).every(([resource, actions]) =>
        actions.every((action) => held.has(`${resource}:${action}`)),
      ),
    )
    .map((role) => role.role_name);
}

/** A number the way this browser writes it (600 → "600", 20000 → "20,000"). */
export const count = (value: number) => value.toLocaleString();

/**
 * The dialog that creates a key (`Create`) or changes one (`Save`, sending only what changed). Errors
 * stay beside their fields; the first one takes the focus.
 */
export function KeyFormDialog({
  apiKey,
  defaults,
  onClose,
  onCreated,
  onSaved,
}: {
  /** The key being changed; absent: a new key. */
  apiKey?: ApiKey;
  defaults?: KeyDefaults;
  onClose: () => void;
  onCreated?: (key: Created) => void;
  onSaved?: (key: ApiKey) => void;
}) {
  const can = useCan();
  const editing = apiKey !== undefined;
  const [original] = useState<KeyForm>(() => (apiKey ? formFromKey(apiKey) : EMPTY_FORM));
  const [form, setForm] = useState<KeyForm>(original);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [rest, setRest] = useState<ProblemDetails | null>(null);
  const [unchanged, setUnchanged] = useState(false);
  const action = useAction();
  const formRef = useRef<HTMLFormElement>(null);

  const set =
    <K extends keyof KeyForm>(field: K) =>
    (value: KeyForm[K]) => {
      setForm((previous) => ({ ...previous, [field]: value }));
      // A corrected field is no longer marked; the others keep their errors until the next submit.
      setErrors((previous) => (previous[field] ? { ...previous, [field]: undefined } : previous));
      setUnchanged(false);
    };

  // A text field's value, setter and error, all named by the one field of the form they concern.
  const bind = (field: TextKey) => ({ value: form[field], onValue: set(field), error: errors[field] });

  const roleNames = useGrantableRoles();
  const role = form.role || roleNames[0] || '';
  const teams = useLoad(
    async () =>
      can('teams:read')
        ? everyPage((cursor) => call(api.GET('/v1/teams', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [],
  );
  const identities = useLoad(
    async () =>
      can('identities:read')
        ? everyPage((cursor) =>
            call(api.GET('/v1/identities', { params: { query: { cursor, limit: 100 } } })),
          )
        : null,
    [],
  );

  // After a refused submit, the first field in error takes the focus (its message is read with it).
  useEffect(() => {
    if (Object.values(errors).some(Boolean)) {
      formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
    }
  }, [errors]);

  const submit = (event: Event) => {
    event.preventDefault();
    const current = { ...form, role };
    const { body, errors: found } = editing ? patchBody(original, current) : createBody(current);
    setRest(null);
    setErrors(found);
    if (Object.values(found).some(Boolean)) return;
    if (editing && !Object.keys(body).length) {
      setUnchanged(true);
      return;
    }
    void action.run(async () => {
      try {
        if (apiKey) {
          const saved = await call(
            api.PATCH('/v1/api-keys/{id}', { params: { path: { id: apiKey.id } }, body }),
          );
          onSaved?.(saved);
        } else {
          onCreated?.(await call(api.POST('/v1/api-keys', { body: body as CreateBody })));
        }
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const placed = fieldErrorsFrom(error.problem);
        setErrors(placed.fields);
        setRest(placed.rest);
      }
    });
  };

  const limitHint = (limit: number | undefined) =>
    limit === undefined ? "Empty: the service's default." : `Empty: the default, ${count(limit)}.`;
  const problem = rest ?? action.problem;
  const errorCount = Object.values(errors).filter(Boolean).length;

  return (
    <Dialog title={apiKey ? `Edit key “${apiKey.name}”` : 'Create an API key'} onClose={onClose} wide>
      <form ref={formRef} onSubmit={submit} class="form-grid" noValidate>
        <fieldset>
          <legend>Key</legend>
          <TextField label="Name" required maxLength={100} {...bind('name')} />
          <TextField label="Description" maxLength={500} {...bind('description')} />
          <SelectField
            label="Role"
            value={role}
            onValue={set('role')}
            options={options(roleNames.includes(role) || !role ? roleNames : [role, ...roleNames])}
            error={errors.role}
          />
          {!editing && (
            <SelectField
              label="Type"
              value={form.type}
              onValue={(value) => set('type')(value as KeyType)}
              options={options(KEY_TYPES)}
              error={errors.type}
            />
          )}
          {form.type === 'team' &&
            (can('teams:read') ? (
              <SelectField
                label="Team"
                {...bind('team_id')}
                options={[
                  { value: '', label: teams.loading ? 'Loading teams…' : 'Choose a team' },
                  ...(teams.data ?? []).map((team) => ({ value: team.id, label: team.name })),
                ]}
              />
            ) : (
              <TextField label="Team" {...bind('team_id')} placeholder="team_…" hint="The team's id." />
            ))}
          {can('identities:read') ? (
            <SelectField
              label="Identity"
              {...bind('identity_id')}
              hint="The customer this key belongs to; its limits and credits are shared by its keys."
              options={[
                { value: '', label: identities.loading ? 'Loading identities…' : 'None' },
                // The key's own identity, while the list loads or if it is past the list's end.
                ...(apiKey?.identity && !(identities.data ?? []).some((i) => i.id === apiKey.identity?.id)
                  ? [{ value: apiKey.identity.id, label: apiKey.identity.external_id }]
                  : []),
                ...(identities.data ?? []).map((identity) => ({
                  value: identity.id,
                  label: identity.external_id,
                })),
              ]}
            />
          ) : (
            <TextField
              label="Identity"
              {...bind('identity_id')}
              placeholder="idt_…"
              hint="The identity's id; empty: none."
            />
          )}
          <TextField
            label="Expiration"
            type="datetime-local"
            {...bind('expiration')}
            hint="Your local time. Empty: never expires."
          />
          {!editing && <CheckboxField label="Enabled" checked={form.enabled} onChecked={set('enabled')} />}
          <CheckboxField
            label="Hide credentials"
            checked={form.hide_credentials}
            onChecked={set('hide_credentials')}
            hint="Never pass this key on to agents, webhooks or logs."
            error={errors.hide_credentials}
          />
        </fieldset>
        <fieldset>
          <legend>Restrictions</legend>
          <TextAreaField
            label="Allowed IPs"
            {...bind('allowed_ips')}
            hint="One IPv4 or IPv6 address or CIDR range per line. Empty: any."
          />
          <TextAreaField
            label="Allowed referrers"
            {...bind('allowed_referrers')}
            hint="One URL per line; end with /* for a prefix. Empty: any."
          />
          {(['minute', 'hour'] as const).map((unit) => (
            <TextField
              key={unit}
              label={`Requests per ${unit}`}
              type="number"
              min={1}
              {...bind(`per_${unit}`)}
              hint={limitHint(defaults?.rate_limit[`requests_per_${unit}`])}
            />
          ))}
        </fieldset>
        <fieldset>
          <legend>Credits</legend>
          <TextField
            label="Credits"
            type="number"
            min={0}
            {...bind('credits')}
            hint="Requests the key may still make. Empty: unlimited."
          />
          <SelectField
            label="Refill"
            value={form.refill}
            onValue={(value) => set('refill')(value as KeyForm['refill'])}
            options={options(['none', 'daily', 'monthly'])}
            error={errors.refill}
          />
          <TextField
            label="Refill amount"
            type="number"
            min={1}
            {...bind('refill_amount')}
            hint="Credits are set to this at 00:00 UTC daily, or on the 1st of the month."
          />
        </fieldset>
        <fieldset>
          <legend>Rotation policy</legend>
          <CheckboxField
            label="Rotate automatically"
            checked={form.rotate}
            onChecked={set('rotate')}
            error={errors.rotate}
          />
          <TextField label="Rotation days" type="number" min={1} max={3650} {...bind('rotation_days')} />
          <GracePeriodField
            value={form.grace}
            onValue={set('grace')}
            error={errors.grace}
            hint="How long the old value keeps working after an automatic rotation."
          />
        </fieldset>
        <fieldset class="span">
          <legend>Meta</legend>
          <TextAreaField
            label="Meta (JSON)"
            {...bind('meta')}
            rows={4}
            hint='Your own data, a JSON object of at most 4 KiB, such as {"plan": "pro"}. Never a secret.'
          />
        </fieldset>
        <div class="span">
          {errorCount > 0 && (
            <p class="problem" role="alert">
              {errorCount === 1 ? 'One field needs' : `${errorCount} fields need`} attention; each says what
              is wrong beside it.
            </p>
          )}
          {unchanged && (
            <p class="note" role="status">
              Nothing changed: there is nothing to save.
            </p>
          )}
          <ProblemNote problem={problem} />
          <DialogButtons submitLabel={editing ? 'Save' : 'Create'} busy={action.busy} onCancel={onClose} />
        </div>
      </form>
    </Dialog>
  );
}
