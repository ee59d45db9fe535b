import { useState } from 'preact/hooks';
import { api, call, everyPage, type ApiKey, type Schemas } from '../api/client';
import { localProblem, useAction, useLoad, usePaged, useRoleNames } from '../api/hooks';
import { Dialog } from '../components/Dialog';
import { CheckboxField, SelectField, TextAreaField, TextField, options } from '../components/Field';
import { KeyActions } from '../components/KeyActions';
import { Page, ProblemNote, When } from '../components/Page';
import { SecretOnce } from '../components/SecretOnce';
import { Table } from '../components/Table';
import { useCan } from '../permissions';
import { Link } from '../router';

type KeyStatus = ApiKey['status'];
type KeyType = ApiKey['type'];
type CreateBody = Schemas['CreateApiKeyDto'];
type Created = Schemas['CreatedApiKeyResponse'];

const STATUSES: KeyStatus[] = ['active', 'expired', 'revoked', 'disabled'];
const TYPES: KeyType[] = ['personal', 'team', 'service'];

export function ApiKeys() {
  const can = useCan();
  const [status, setStatus] = useState<'' | KeyStatus>('');
  const [type, setType] = useState<'' | KeyType>('');
  const [creating, setCreating] = useState(false);
  // The new key's value: in this component's state only, gone when the user leaves the page.
  const [created, setCreated] = useState<Created | null>(null);

  const keys = usePaged(
    (cursor) =>
      call(
        api.GET('/v1/api-keys', {
          params: { query: { cursor, status: status || undefined, type: type || undefined } },
        }),
      ),
    [status, type],
  );

  return (
    <Page title="API Keys">
      <p class="lead">
        The keys of your organization. A key's value is shown once, when it is created or rotated.
      </p>
      {created && (
        <SecretOnce
          title="Key created"
          label="API key value"
          value={created.key}
          onDone={() => setCreated(null)}
        >
          <p>
            Key <strong>{created.name}</strong> was created with the role <code>{created.role}</code>.
          </p>
        </SecretOnce>
      )}
      <div class="toolbar">
        <SelectField
          label="Filter by status"
          value={status}
          onValue={(value) => setStatus(value as KeyStatus | '')}
          options={[{ value: '', label: 'Any status' }, ...options(STATUSES)]}
        />
        <SelectField
          label="Filter by type"
          value={type}
          onValue={(value) => setType(value as KeyType | '')}
          options={[{ value: '', label: 'Any type' }, ...options(TYPES)]}
        />
        {can('api_keys:create') && (
          <button type="button" class="toolbar-action" onClick={() => setCreating(true)}>
            Create key
          </button>
        )}
      </div>
      <Table
        caption="API keys"
        rows={keys.items}
        rowKey={(key) => key.id}
        paged={keys}
        empty={status || type ? 'No keys match these filters.' : 'No keys yet.'}
        columns={[
          {
            header: 'Name',
            rowHeader: true,
            cell: (key) => <Link href={`/api-keys/${key.id}`}>{key.name}</Link>,
          },
          { header: 'Role', cell: (key) => key.role },
          { header: 'Type', cell: (key) => key.type },
          { header: 'Status', cell: (key) => <span class={`badge ${key.status}`}>{key.status}</span> },
          { header: 'Start', cell: (key) => <code>{key.start}…</code> },
          { header: 'Last used', cell: (key) => <When at={key.last_used_at} fallback="Never" /> },
          { header: 'Expiration', cell: (key) => <When at={key.expiration} fallback="Never" /> },
          {
            header: 'Actions',
            cell: (key) => <KeyActions apiKey={key} onChanged={keys.reload} onDeleted={keys.reload} />,
          },
        ]}
      />
      {creating && (
        <CreateKeyDialog
          onClose={() => setCreating(false)}
          onCreated={(key) => {
            setCreating(false);
            setCreated(key);
            keys.reload();
          }}
        />
      )}
    </Page>
  );
}

interface KeyForm {
  name: string;
  description: string;
  role: string;
  type: KeyType;
  team_id: string;
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
  grace_seconds: string;
  hide_credentials: boolean;
  enabled: boolean;
  meta: string;
}

const EMPTY_FORM: KeyForm = {
  name: '',
  description: '',
  role: '',
  type: 'personal',
  team_id: '',
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
  grace_seconds: '0',
  hide_credentials: false,
  enabled: true,
  meta: '',
};

const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

/** A whole number from a field, undefined when the field is empty. */
function wholeNumber(label: string, text: string, min: number): number | undefined {
  if (text.trim() === '') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min)
    throw localProblem(`${label} must be a whole number ≥ ${min}.`);
  return value;
}

/** The request body from the form, or a problem naming the field that cannot be sent. */
export function createBody(form: KeyForm): CreateBody {
  const body: CreateBody = {
    name: form.name,
    role: form.role,
    type: form.type,
    enabled: form.enabled,
    hide_credentials: form.hide_credentials,
  };
  if (form.description.trim()) body.description = form.description;
  if (form.type === 'team') {
    if (!form.team_id) throw localProblem('Choose the team a team key acts for.');
    body.team_id = form.team_id;
  }
  if (form.expiration) {
    // datetime-local is the browser's local time; the API takes an ISO 8601 instant.
    const at = new Date(form.expiration);
    if (Number.isNaN(at.getTime())) throw localProblem('Expiration is not a valid date and time.');
    body.expiration = at.toISOString();
  }
  const ips = lines(form.allowed_ips);
  if (ips.length) body.allowed_ips = ips;
  const referrers = lines(form.allowed_referrers);
  if (referrers.length) body.allowed_referrers = referrers;
  const perMinute = wholeNumber('Requests per minute', form.per_minute, 1);
  const perHour = wholeNumber('Requests per hour', form.per_hour, 1);
  if (perMinute !== undefined || perHour !== undefined) {
    body.rate_limit = { requests_per_minute: perMinute, requests_per_hour: perHour };
  }
  const remaining = wholeNumber('Credits', form.credits, 0);
  if (form.refill !== 'none' && remaining === undefined) {
    throw localProblem('Set Credits (the requests remaining) to use a refill.');
  }
  if (remaining !== undefined) {
    const amount = form.refill === 'none' ? undefined : wholeNumber('Refill amount', form.refill_amount, 1);
    if (form.refill !== 'none' && amount === undefined) throw localProblem('Set the Refill amount.');
    body.credits = {
      remaining,
      refill: form.refill === 'none' || amount === undefined ? null : { interval: form.refill, amount },
    };
  }
  if (form.rotate) {
    const days = wholeNumber('Rotation days', form.rotation_days, 1);
    if (days === undefined) throw localProblem('Set Rotation days to rotate automatically.');
    body.rotation_policy = {
      enabled: true,
      days,
      grace_period_seconds: wholeNumber('Grace period (seconds)', form.grace_seconds, 0) ?? 0,
    };
  }
  if (form.meta.trim()) {
    let meta: unknown;
    try {
      meta = JSON.parse(form.meta);
    } catch {
      throw localProblem('Meta (JSON) is not valid JSON.');
    }
    if (!meta || typeof meta !== 'object' || Array.isArray(meta)) {
      throw localProblem('Meta (JSON) must be a JSON object, such as {"plan": "pro"}.');
    }
    body.meta = meta as Record<string, unknown>;
  }
  return body;
}

function CreateKeyDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (key: Created) => void }) {
  const can = useCan();
  const [form, setForm] = useState<KeyForm>(EMPTY_FORM);
  const set =
    <K extends keyof KeyForm>(field: K) =>
    (value: KeyForm[K]) =>
      setForm((previous) => ({ ...previous, [field]: value }));
  const action = useAction();

  const roleNames = useRoleNames();
  const teams = useLoad(
    async () =>
      can('teams:read')
        ? everyPage((cursor) => call(api.GET('/v1/teams', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [],
  );

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = createBody({ ...form, role: form.role || roleNames[0] || '' });
      onCreated(await call(api.POST('/v1/api-keys', { body })));
    });
  };

  return (
    <Dialog title="Create an API key" onClose={onClose} wide>
      <form onSubmit={submit} class="form-grid">
        <fieldset>
          <legend>Key</legend>
          <TextField label="Name" required maxLength={100} value={form.name} onValue={set('name')} />
          <TextField
            label="Description"
            maxLength={500}
            value={form.description}
            onValue={set('description')}
          />
          <SelectField
            label="Role"
            value={form.role || roleNames[0] || ''}
            onValue={set('role')}
            options={options(roleNames)}
          />
          <SelectField
            label="Type"
            value={form.type}
            onValue={(value) => set('type')(value as KeyType)}
            options={options(TYPES)}
          />
          {form.type === 'team' &&
            (can('teams:read') ? (
              <SelectField
                label="Team"
                value={form.team_id}
                onValue={set('team_id')}
                options={[
                  { value: '', label: teams.loading ? 'Loading teams…' : 'Choose a team' },
                  ...(teams.data ?? []).map((team) => ({ value: team.id, label: team.name })),
                ]}
              />
            ) : (
              <TextField
                label="Team"
                value={form.team_id}
                onValue={set('team_id')}
                placeholder="team_…"
                hint="The team's id."
              />
            ))}
          <TextField
            label="Expiration"
            type="datetime-local"
            value={form.expiration}
            onValue={set('expiration')}
            hint="Your local time. Empty: never expires."
          />
          <CheckboxField label="Enabled" checked={form.enabled} onChecked={set('enabled')} />
          <CheckboxField
            label="Hide credentials"
            checked={form.hide_credentials}
            onChecked={set('hide_credentials')}
            hint="Never pass this key on to agents, webhooks or logs."
          />
        </fieldset>
        <fieldset>
          <legend>Restrictions</legend>
          <TextAreaField
            label="Allowed IPs"
            value={form.allowed_ips}
            onValue={set('allowed_ips')}
            hint="One IPv4 or IPv6 address or CIDR range per line. Empty: any."
          />
          <TextAreaField
            label="Allowed referrers"
            value={form.allowed_referrers}
            onValue={set('allowed_referrers')}
            hint="One URL per line; end with /* for a prefix. Empty: any."
          />
          <TextField
            label="Requests per minute"
            type="number"
            min={1}
            value={form.per_minute}
            onValue={set('per_minute')}
            hint="Empty: the server's default."
          />
          <TextField
            label="Requests per hour"
            type="number"
            min={1}
            value={form.per_hour}
            onValue={set('per_hour')}
            hint="Empty: the server's default."
          />
        </fieldset>
        <fieldset>
          <legend>Credits</legend>
          <TextField
            label="Credits"
            type="number"
            min={0}
            value={form.credits}
            onValue={set('credits')}
            hint="Requests the key may still make. Empty: unlimited."
          />
          <SelectField
            label="Refill"
            value={form.refill}
            onValue={(value) => set('refill')(value as KeyForm['refill'])}
            options={options(['none', 'daily', 'monthly'])}
          />
          <TextField
            label="Refill amount"
            type="number"
            min={1}
            value={form.refill_amount}
            onValue={set('refill_amount')}
            hint="Credits are set to this at 00:00 UTC daily, or on the 1st of the month."
          />
        </fieldset>
        <fieldset>
          <legend>Rotation policy</legend>
          <CheckboxField label="Rotate automatically" checked={form.rotate} onChecked={set('rotate')} />
          <TextField
            label="Rotation days"
            type="number"
            min={1}
            max={3650}
            value={form.rotation_days}
            onValue={set('rotation_days')}
          />
          <TextField
            label="Grace period (seconds)"
            type="number"
            min={0}
            max={604800}
            value={form.grace_seconds}
            onValue={set('grace_seconds')}
            hint="How long the old value keeps working after an automatic rotation."
          />
        </fieldset>
        <fieldset class="span">
          <legend>Meta</legend>
          <TextAreaField
            label="Meta (JSON)"
            value={form.meta}
            onValue={set('meta')}
            rows={4}
            hint='Your own data, a JSON object of at most 4 KiB, such as {"plan": "pro"}. Never a secret.'
          />
        </fieldset>
        <div class="span">
          <ProblemNote problem={action.problem} />
          <div class="buttons">
            <button type="button" class="secondary" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" disabled={action.busy} aria-busy={action.busy}>
              Create
            </button>
          </div>
        </div>
      </form>
    </Dialog>
  );
}
