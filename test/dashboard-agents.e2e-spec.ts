import type { Locator, Page } from 'playwright-core';
import type { Response } from 'supertest';
import { waitFor } from './support/agent-server';
import { SignedUpOrganization, signUpOrganization } from './support/factories';
import {
  BrowserDashboard,
  describeInBrowser,
  everythingShown,
  expectAccessible,
  navLink,
  pageShown,
  showNavigation,
  signedInPage,
  startBrowserDashboard,
} from './support/dashboard-browser';
import { LlmUpstream } from './support/llm-upstreams';
import { CALLS_LOCAL_TARGETS } from './support/outbound-targets';
import type { TestApp } from './support/test-app';

/**
 * Issue 45's "a model agent is usable … from the dashboard", in a real browser: the Agents page's form
 * makes an `llm` agent (CONTRACT, "Model agents and provider secrets") whose secret is chosen by name,
 * the API's refusal (400 invalid_config) is shown on the field it names, and a task of the agent, run
 * against a local server speaking Chat Completions, shows the model's output on the task's page. The
 * dashboard offers no way to start a task, so the task is created through the API.
 */
describeInBrowser('test/dashboard-agents.e2e-spec.ts')('Agents page in a browser (Chromium)', () => {
  let dashboard: BrowserDashboard;
  let t: TestApp;
  let openai: LlmUpstream;
  let org: SignedUpOrganization;
  let page: Page;
  const secretValue = 'sk-dashboard-agent-VALUE-7781';

  const agents = async (): Promise<Array<Record<string, any>>> =>
    (await t.http.get('/v1/agents').set(org.auth).expect(200)).body.data.filter(
      (agent: { built_in: boolean }) => !agent.built_in,
    );
  const row = (name: string): Locator =>
    page
      .getByRole('table', { name: 'Agents' })
      .getByRole('row')
      .filter({ has: page.getByRole('rowheader').filter({ hasText: name }) });

  beforeAll(async () => {
    openai = await LlmUpstream.start('openai');
    dashboard = await startBrowserDashboard({ env: { ...CALLS_LOCAL_TARGETS, WORKER_CONCURRENCY: '2' } });
    t = dashboard.t;
    org = await signUpOrganization(t.http, 'Agents page');
    // The refusal the form provokes on purpose is a 400 in the console.
    page = await signedInPage(
      dashboard,
      'administrator',
      org.email,
      '/settings',
      (text, url) => url.endsWith('/v1/agents') && /status of 400/.test(text),
    );
    await pageShown(page, 'Settings');
  }, 300_000);

  afterAll(async () => {
    await dashboard?.close();
    await openai?.close();
  });

  it('is reached from the navigation and, without secrets, points at the Secrets page', async () => {
    await showNavigation(page);
    await navLink(page, 'Agents').click();
    await pageShown(page, 'Agents');
    // The built-in echo agent is listed, with nothing to edit.
    await row('Echo').getByText('Built in').waitFor();

    await page.getByRole('button', { name: 'Create agent' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create agent' });
    await dialog.getByRole('link', { name: 'Secrets page' }).click();
    await pageShown(page, 'Secrets');

    await page.getByRole('button', { name: 'Create secret' }).click();
    const create = page.getByRole('dialog', { name: 'Create secret' });
    await create.getByLabel('Name').fill('openai-test');
    await create.getByLabel('Value').fill(secretValue);
    await create.getByRole('button', { name: 'Create', exact: true }).click();
    await create.waitFor({ state: 'hidden' });
  });

  it('creates an llm agent, showing the API’s refusal on the field it names', async () => {
    await navLink(page, 'Agents').click();
    await pageShown(page, 'Agents');
    await page.getByRole('button', { name: 'Create agent' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create agent' });
    expect(await dialog.getByLabel('Type').inputValue()).toBe('llm');
    await dialog.getByLabel('Name').fill('Model Writer');
    await dialog.getByLabel('Description').fill('Writes with a model');
    await dialog.getByLabel('Provider').selectOption('openai');
    await dialog.getByLabel('Model').fill('gpt-test');
    await dialog.getByLabel('Secret').selectOption({ label: 'openai-test' });
    await dialog.getByLabel('Base URL').fill(openai.baseUrl);
    await dialog.getByLabel('System prompt').fill('You are terse.');
    await dialog.getByLabel('Max output tokens').fill('500');
    // Above OpenAI's 2: the API refuses it, and the form says so beside the field.
    await dialog.getByLabel('Temperature').fill('2.5');
    await dialog.getByLabel('Credits per 1k input tokens').fill('1');
    await dialog.getByLabel('Credits per 1k output tokens').fill('2');
    await dialog.getByLabel('Default max credits').fill('50');
    await expectAccessible(page, 'the Create agent dialog');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();

    const temperature = dialog.getByLabel('Temperature');
    await dialog.locator('[aria-invalid="true"]').waitFor();
    expect(await temperature.getAttribute('aria-invalid')).toBe('true');
    const errorId = (await temperature.getAttribute('aria-describedby'))!.split(' ')[0];
    expect(await dialog.locator(`[id="${errorId}"]`).innerText()).toMatch(/temperature/i);
    expect(await agents()).toEqual([]);

    await temperature.fill('0.5');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row('Model Writer').getByText('openai · gpt-test').waitFor();

    const [agent] = await agents();
    expect(agent).toMatchObject({
      name: 'Model Writer',
      type: 'llm',
      description: 'Writes with a model',
      config: {
        provider: 'openai',
        model: 'gpt-test',
        secret_id: expect.stringMatching(/^sec_/),
        base_url: openai.baseUrl,
        system: 'You are terse.',
        max_output_tokens: 500,
        temperature: 0.5,
      },
      pricing: { credits_per_1k_input_tokens: 1, credits_per_1k_output_tokens: 2 },
      default_max_credits: 50,
    });
    expect(await page.content()).not.toContain(secretValue);
    await expectAccessible(page, 'Agents');
  });

  it('edits the agent with its values in the form', async () => {
    await row('Model Writer').getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Model Writer' });
    expect(await dialog.getByLabel('Model').inputValue()).toBe('gpt-test');
    expect(await dialog.getByLabel('Temperature').inputValue()).toBe('0.5');
    expect(await dialog.getByLabel('Default max credits').inputValue()).toBe('50');
    await dialog.getByLabel('Model').fill('gpt-test-2');
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row('Model Writer').getByText('openai · gpt-test-2').waitFor();
    const [agent] = await agents();
    expect(agent.config).toMatchObject({ model: 'gpt-test-2', temperature: 0.5, max_output_tokens: 500 });
  });

  it('keeps the settings the form has no field for when editing (an http agent’s max_concurrency)', async () => {
    const http = await t.http
      .post('/v1/agents')
      .set(org.auth)
      .send({ name: 'Endpoint', type: 'http', config: { url: 'http://127.0.0.1:9/run', max_concurrency: 3 } })
      .expect(201);
    await page.reload();
    await pageShown(page, 'Agents');
    await row('Endpoint').getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Endpoint' });
    expect(await dialog.getByLabel('URL').inputValue()).toBe('http://127.0.0.1:9/run');
    await dialog.getByLabel('Timeout (ms)').fill('5000');
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    const saved = await t.http.get(`/v1/agents/${http.body.id}`).set(org.auth).expect(200);
    expect(saved.body.config).toEqual({
      url: 'http://127.0.0.1:9/run',
      timeout_ms: 5000,
      max_concurrency: 3,
    });
    await t.http.delete(`/v1/agents/${http.body.id}`).set(org.auth).expect(204);
  });

  it("runs a task of the agent, whose page shows the model's output and result", async () => {
    openai.answer({
      kind: 'stream',
      deltas: ['Hello ', 'from the ', 'model'],
      inputTokens: 30,
      outputTokens: 3,
    });
    const [agent] = await agents();
    const created = await t.http
      .post('/v1/tasks')
      .set(org.auth)
      .send({ agent_type: 'llm', agent_id: agent.id, instruction: 'Say hello' })
      .expect(202);
    await waitFor<Response>(
      () => t.http.get(`/v1/tasks/${created.body.id}`).set(org.auth),
      (res) => ['succeeded', 'failed', 'cancelled'].includes(res.body.status),
      { timeoutMs: 60_000, intervalMs: 100 },
    );

    await navLink(page, 'Tasks').click();
    await pageShown(page, 'Tasks');
    await page.getByRole('link', { name: created.body.id }).click();
    await pageShown(page, /Task/);
    const log = page.getByRole('log', { name: 'Output' });
    await log.getByText('Hello from the model').waitFor();
    const result = page.getByRole('region', { name: 'Result' });
    await result.getByText(/"finish_reason": "stop"/).waitFor();
    expect(await result.innerText()).toContain('"model": "gpt-test-2-served"');
    expect(await everythingShown(page)).not.toContain(secretValue);
    expect(openai.requests.at(-1)!.body.model).toBe('gpt-test-2');
    expect(dashboard.errors).toEqual([]);
  });
});
