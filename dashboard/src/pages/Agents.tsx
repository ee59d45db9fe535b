import { useState } from 'preact/hooks';
import { api, call, everyPage, type Schemas } from '../api/client';
import { localProblem, useAction, useLoad, usePaged } from '../api/hooks';
import type { ProblemDetails } from '../api/session';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog, DialogButtons, useDialogs } from '../components/Dialog';
import { SelectField, TextAreaField, TextField } from '../components/Field';
import { Page, ProblemNote, When } from '../components/Page';
import { Table } from '../components/Table';
import { CreateToolbar } from '../components/Toolbar';
import { useCan } from '../permissions';
import { Link } from '../router';

type Agent = Schemas['AgentResponse'];
/** The types an agent can be made of here; `echo` is built in and takes nothing to configure. */
type ConfiguredType = 'http' | 'llm';

/**
 * The organization's agents: the built-in ones and those made here, of type `http` (a URL the service
 * calls) or `llm` (a model provider's API, with an organization secret as its key; CONTRACT, "Model
 * agents and provider secrets"). Create and edit share one form; the API checks every value and its
 * refusals are shown on the field they name.
 */
export function Agents() {
  const can = useCan();
  const agents = usePaged((cursor) => call(api.GET('/v1/agents', { params: { query: { cursor } } })), []);
  const { dialog, open, close, done } = useDialogs<
    { kind: 'create' } | { kind: 'edit'; agent: Agent } | { kind: 'delete'; agent: Agent }
  >(agents.reload);

  return (
    <Page title="Agents">
      <p class="lead">
        What tasks run on: an HTTP endpoint of yours, or a model at OpenAI, Anthropic or any server that
        speaks their API. Each agent is also an MCP tool, <code>run_</code> and its name.
      </p>
      <CreateToolbar
        permission="agents:create"
        label="Create agent"
        onClick={() => open({ kind: 'create' })}
      />
      <Table
        caption="Agents"
        rows={agents.items}
        rowKey={(agent) => agent.id}
        paged={agents}
        empty="No agents yet."
        columns={[
          { header: 'Name', rowHeader: true, cell: (agent) => agent.name },
          { header: 'Type', cell: (agent) => <code>{agent.type}</code> },
          { header: 'Runs', fold: true, cell: (agent) => <span class="break">{targetOf(agent)}</span> },
          { header: 'Description', fold: true, cell: (agent) => agent.description || '—' },
          { header: 'Created', fold: true, cell: (agent) => <When at={agent.created_at} compact /> },
          {
            header: 'Actions',
            cell: (agent) =>
              agent.built_in ? (
                <span class="hint">Built in</span>
              ) : (
                <span class="buttons inline">
                  {can('agents:update') && (
                    <button type="button" class="secondary" onClick={() => open({ kind: 'edit', agent })}>
                      Edit
                    </button>
                  )}
                  {can('agents:delete') && (
                    <button type="button" class="danger" onClick={() => open({ kind: 'delete', agent })}>
                      Delete
                    </button>
                  )}
                </span>
              ),
          },
        ]}
      />
      {dialog?.kind === 'create' && <AgentDialog onClose={close} onSaved={done} />}
      {dialog?.kind === 'edit' && <AgentDialog agent={dialog.agent} onClose={close} onSaved={done} />}
      {dialog?.kind === 'delete' && (
        <ConfirmDialog
          title={`Delete ${dialog.agent.name}?`}
          confirmLabel="Delete"
          confirm={() => call(api.DELETE('/v1/agents/{id}', { params: { path: { id: dialog.agent.id } } }))}
          onDone={done}
          onClose={close}
        >
          <p>New tasks can no longer run on it; tasks it ran stay.</p>
        </ConfirmDialog>
      )}
    </Page>
  );
}

/** What the agent calls, in a few words: its URL, or its provider and model. */
function targetOf(agent: Agent): string {
  const config = (agent.config ?? {}) as Record<string, unknown>;
  if (agent.type === 'http') return String(config.url ?? '—');
  if (agent.type === 'llm') return `${String(config.provider)} · ${String(config.model)}`;
  return '—';
}

/** The form's values, all as typed (numbers too): blank means "not set". */
interface Form {
  type: ConfiguredType;
  name: string;
  description: string;
  url: string;
  timeout_ms: string;
  provider: 'openai' | 'anthropic';
  model: string;
  secret_id: string;
  base_url: string;
  system: string;
  max_output_tokens: string;
  temperature: string;
  input_price: string;
  output_price: string;
  default_max_credits: string;
}
type FormField = keyof Form;
type FieldErrors = Partial<Record<FormField, string>>;

const text = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

function formOf(agent?: Agent): Form {
  const config = (agent?.config ?? {}) as Record<string, unknown>;
  const priced =
    agent && (agent.pricing.credits_per_1k_input_tokens || agent.pricing.credits_per_1k_output_tokens);
  return {
    type: agent?.type === 'http' ? 'http' : 'llm',
    name: agent?.name ?? '',
    description: agent?.description ?? '',
    url: text(config.url),
    timeout_ms: text(config.timeout_ms),
    provider: config.provider === 'anthropic' ? 'anthropic' : 'openai',
    model: text(config.model),
    secret_id: text(config.secret_id),
    base_url: text(config.base_url),
    system: text(config.system),
    max_output_tokens: text(config.max_output_tokens),
    temperature: text(config.temperature),
    input_price: priced ? text(agent.pricing.credits_per_1k_input_tokens) : '',
    output_price: priced ? text(agent.pricing.credits_per_1k_output_tokens) : '',
    default_max_credits: text(agent?.default_max_credits),
  };
}

/** A number field's value for the API: blank is unset; anything else must be a number. */
function numberOf(value: string, label: string): number | undefined {
  if (!value.trim()) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) throw localProblem(`${label} must be a number.`);
  return number;
}

/**
 * The config the type takes, with what was left blank left out (the API's defaults apply). An update
 * sends the whole config, so settings this form has no field for (an http agent's `max_concurrency`)
 * are kept as they were.
 */
function configOf(form: Form, original: Record<string, unknown> = {}): Record<string, unknown> {
  const set = (entries: Record<string, unknown>) => {
    const kept = Object.entries(original).filter(([key]) => !(key in entries));
    const typed = Object.entries(entries).filter(([, value]) => value !== undefined && value !== '');
    return Object.fromEntries([...kept, ...typed]);
  };
  if (form.type === 'http') {
    return set({ url: form.url, timeout_ms: numberOf(form.timeout_ms, 'Timeout') });
  }
  return set({
    provider: form.provider,
    model: form.model,
    secret_id: form.secret_id,
    base_url: form.base_url.trim(),
    system: form.system,
    max_output_tokens: numberOf(form.max_output_tokens, 'Max output tokens'),
    temperature: numberOf(form.temperature, 'Temperature'),
  });
}

/** Pricing from the two prices: both blank is free (null); one alone prices the other side at 0. */
function pricingOf(form: Form): Schemas['AgentPricingDto'] | null {
  const input = numberOf(form.input_price, 'Credits per 1k input tokens');
  const output = numberOf(form.output_price, 'Credits per 1k output tokens');
  if (input === undefined && output === undefined) return null;
  return { credits_per_1k_input_tokens: input ?? 0, credits_per_1k_output_tokens: output ?? 0 };
}

/** The API's field names (`config.temperature`, `pricing.credits_per_1k_input_tokens`, …) on the form's. */
const FIELD_OF_API: Record<string, FormField | undefined> = {
  name: 'name',
  description: 'description',
  type: 'type',
  'config.url': 'url',
  'config.timeout_ms': 'timeout_ms',
  'config.provider': 'provider',
  'config.model': 'model',
  'config.secret_id': 'secret_id',
  'config.base_url': 'base_url',
  'config.system': 'system',
  'config.max_output_tokens': 'max_output_tokens',
  'config.temperature': 'temperature',
  'pricing.credits_per_1k_input_tokens': 'input_price',
  'pricing.credits_per_1k_output_tokens': 'output_price',
  default_max_credits: 'default_max_credits',
};

/** The refusal's errors placed on fields, and the problem with only the errors no field shows. */
function placeErrors(problem: ProblemDetails | null): { fields: FieldErrors; rest: ProblemDetails | null } {
  const fields: FieldErrors = {};
  const unplaced: { field: string; message: string }[] = [];
  for (const error of problem?.errors ?? []) {
    const field = FIELD_OF_API[error.field];
    if (field && !fields[field]) fields[field] = error.message;
    else if (!field) unplaced.push(error);
  }
  return { fields, rest: problem && { ...problem, errors: unplaced } };
}

function AgentDialog({
  agent,
  onClose,
  onSaved,
}: {
  agent?: Agent;
  onClose: () => void;
  onSaved: () => void;
}) {
  const [form, setForm] = useState(() => formOf(agent));
  const action = useAction();
  const update = (field: FormField) => (value: string) => setForm((now) => ({ ...now, [field]: value }));
  const { fields: errors, rest } = placeErrors(action.problem);

  const save = async () => {
    const common = {
      name: form.name,
      description: form.description.trim() ? form.description : null,
      config: configOf(form, (agent?.config ?? {}) as Record<string, unknown>),
      pricing: pricingOf(form),
      default_max_credits: numberOf(form.default_max_credits, 'Default max credits') ?? null,
    };
    if (agent) {
      await call(api.PATCH('/v1/agents/{id}', { params: { path: { id: agent.id } }, body: common }));
    } else {
      await call(api.POST('/v1/agents', { body: { ...common, type: form.type } }));
    }
  };

  return (
    <Dialog title={agent ? `Edit ${agent.name}` : 'Create agent'} onClose={onClose}>
      <form
        class="form-grid"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(save).then((saved) => saved && onSaved());
        }}
      >
        <TextField
          label="Name"
          required
          maxLength={100}
          value={form.name}
          onValue={update('name')}
          error={errors.name}
        />
        {/* An agent's type is fixed once it exists (the API takes none on update). */}
        {agent ? (
          <div class="field">
            <p>
              Type <code>{form.type}</code>
            </p>
            <p class="hint">Fixed once the agent exists.</p>
          </div>
        ) : (
          <SelectField
            label="Type"
            value={form.type}
            onValue={(type) => setForm((now) => ({ ...now, type: type as ConfiguredType }))}
            options={[
              { value: 'llm', label: 'Model (llm)' },
              { value: 'http', label: 'HTTP endpoint (http)' },
            ]}
            error={errors.type}
          />
        )}
        <div class="span">
          <TextField
            label="Description"
            maxLength={500}
            value={form.description}
            onValue={update('description')}
            hint="Also the description of its MCP tool."
            error={errors.description}
          />
        </div>
        {form.type === 'http' ? (
          <HttpFields form={form} update={update} errors={errors} />
        ) : (
          <LlmFields form={form} update={update} errors={errors} />
        )}
        <fieldset class="span">
          <legend>Costs</legend>
          <div class="form-grid">
            <TextField
              label="Credits per 1k input tokens"
              type="number"
              min={0}
              step={0.001}
              value={form.input_price}
              onValue={update('input_price')}
              error={errors.input_price}
            />
            <TextField
              label="Credits per 1k output tokens"
              type="number"
              min={0}
              step={0.001}
              value={form.output_price}
              onValue={update('output_price')}
              error={errors.output_price}
            />
            <TextField
              label="Default max credits"
              type="number"
              min={0}
              value={form.default_max_credits}
              onValue={update('default_max_credits')}
              hint="Reserved by a task that names no max_credits. Blank: 0."
              error={errors.default_max_credits}
            />
          </div>
        </fieldset>
        <div class="span">
          <ProblemNote problem={rest} />
          <DialogButtons submitLabel={agent ? 'Save' : 'Create'} busy={action.busy} onCancel={onClose} />
        </div>
      </form>
    </Dialog>
  );
}

interface FieldsProps {
  form: Form;
  update: (field: FormField) => (value: string) => void;
  errors: FieldErrors;
}

function HttpFields({ form, update, errors }: FieldsProps) {
  return (
    <>
      <div class="span">
        <TextField
          label="URL"
          type="url"
          required
          maxLength={2000}
          placeholder="https://agents.example.com/run"
          value={form.url}
          onValue={update('url')}
          error={errors.url}
        />
      </div>
      <TextField
        label="Timeout (ms)"
        type="number"
        min={100}
        max={300000}
        value={form.timeout_ms}
        onValue={update('timeout_ms')}
        hint="100 to 300000. Blank: the server's default."
        error={errors.timeout_ms}
      />
    </>
  );
}

function LlmFields({ form, update, errors }: FieldsProps) {
  const maxTemperature = form.provider === 'anthropic' ? 1 : 2;
  return (
    <>
      <SelectField
        label="Provider"
        value={form.provider}
        onValue={update('provider')}
        options={[
          { value: 'openai', label: 'OpenAI (Chat Completions)' },
          { value: 'anthropic', label: 'Anthropic (Messages)' },
        ]}
        hint="The API the model speaks; OpenAI's also serves vLLM, Ollama and llama.cpp."
        error={errors.provider}
      />
      <TextField
        label="Model"
        required
        placeholder={form.provider === 'anthropic' ? 'claude-sonnet-4-5' : 'gpt-4o-mini'}
        value={form.model}
        onValue={update('model')}
        error={errors.model}
      />
      <SecretField value={form.secret_id} onValue={update('secret_id')} error={errors.secret_id} />
      <TextField
        label="Base URL"
        type="url"
        placeholder={
          form.provider === 'anthropic' ? 'https://api.anthropic.com' : 'http://localhost:11434/v1'
        }
        value={form.base_url}
        onValue={update('base_url')}
        hint="Blank: the provider's public API."
        error={errors.base_url}
      />
      <div class="span">
        <TextAreaField
          label="System prompt"
          rows={4}
          spellcheck
          value={form.system}
          onValue={update('system')}
          hint="Sent before each task's instruction. At most 32 KiB."
          error={errors.system}
        />
      </div>
      <TextField
        label="Max output tokens"
        type="number"
        min={1}
        max={200000}
        value={form.max_output_tokens}
        onValue={update('max_output_tokens')}
        hint="1 to 200000. Blank: the provider's default."
        error={errors.max_output_tokens}
      />
      <TextField
        label="Temperature"
        type="number"
        min={0}
        max={maxTemperature}
        step={0.1}
        value={form.temperature}
        onValue={update('temperature')}
        hint={`0 to ${maxTemperature}. Blank: the provider's default.`}
        error={errors.temperature}
      />
    </>
  );
}

/**
 * The secret sent upstream as the provider's key, chosen by name from the organization's secrets. Without
 * secrets:read the list cannot be asked for, so the secret's id is typed instead.
 */
function SecretField({
  value,
  onValue,
  error,
}: {
  value: string;
  onValue: (value: string) => void;
  error?: string;
}) {
  const can = useCan();
  const readable = can('secrets:read');
  const secrets = useLoad(
    async () =>
      readable
        ? everyPage((cursor) => call(api.GET('/v1/secrets', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [readable],
  );
  if (!readable) {
    return (
      <TextField
        label="Secret"
        required
        placeholder="sec_…"
        value={value}
        onValue={onValue}
        hint="The id of an organization secret (listing secrets needs secrets:read)."
        error={error}
      />
    );
  }
  if (secrets.problem) return <ProblemNote problem={secrets.problem} />;
  const list = secrets.data ?? [];
  if (!secrets.loading && list.length === 0) {
    return (
      <div class="field">
        <p class="hint" role="note">
          No secrets yet: add the provider's API key on the <Link href="/secrets">Secrets page</Link> first.
        </p>
      </div>
    );
  }
  return (
    <SelectField
      label="Secret"
      required
      value={value}
      onValue={onValue}
      options={[
        { value: '', label: 'Choose a secret' },
        ...list.map((secret) => ({ value: secret.id, label: secret.name })),
      ]}
      hint="Sent upstream as the provider's API key; its value is never shown."
      error={error}
    />
  );
}
