import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Locator, Page } from 'playwright-core';
import { createKey, pollUntil, type CreatedKey } from './support/keys';
import { CreatedUser, PASSWORD, SignedUpOrganization, signUpOrganization } from './support/factories';
import {
  BrowserDashboard,
  describeInBrowser,
  DESKTOP,
  expectAccessible,
  expectFolded,
  expectNothingOverflows,
  inPage,
  pageShown,
  PHONE,
  screenshot,
  signedInPage,
  startBrowserDashboard,
} from './support/dashboard-browser';
import { HeldRuns, type HeldRun } from './support/held-runs';
import { OAuthTestClient } from './support/oauth-flow';
import type { TestApp } from './support/test-app';

/**
 * The dashboard at a phone's width (390 × 844) and what issue 43 added to its lists, in Chromium: every
 * table keeps what identifies and describes a row in view and folds the rest into labelled lines under
 * it, with nothing off to the right (the page nor a table's own region); the key list's requests of the
 * last 24 hours, credits and identity; owners and audit actors by name; audit entries' before and after
 * values; the "use this key" snippets beside a new key's value (the curl one run as printed); the task
 * list following a task to its end without a reload, its agent by name; no progress bar on a task that
 * ended. Each step is checked against the API's own answer.
 */

type Json = Record<string, any>;

describeInBrowser('test/dashboard-phone.e2e-spec.ts')(
  'the dashboard on a phone, and its lists (Chromium)',
  () => {
    let dashboard: BrowserDashboard;
    let t: TestApp;
    let baseUrl: string;
    let runs: HeldRuns;
    let org: SignedUpOrganization;
    let owner: CreatedUser & { name: string };
    let agentId: string;
    let identityId: string;
    let webhookId: string;
    let metered: CreatedKey;
    let personal: CreatedKey;
    let phone: Page;

    const AGENT_NAME = 'Quarterly summariser';
    const OWNER_NAME = 'Priya Owner';
    const REQUESTS = 3;

    const table = (name: string | RegExp, on: Page = phone) => on.getByRole('table', { name });
    const rowWith = (tableLocator: Locator, text: string): Locator =>
      tableLocator.getByRole('row').filter({ has: phone.getByRole('rowheader').filter({ hasText: text }) });

    /** Opens a dashboard route on the phone and waits for its page and lists. */
    async function open(path: string, heading: string | RegExp): Promise<void> {
      await phone.goto(`${baseUrl}/dashboard${path}`);
      await pageShown(phone, heading);
    }

    beforeAll(async () => {
      runs = await HeldRuns.start();
      dashboard = await startBrowserDashboard({
        env: { WORKER_CONCURRENCY: '2', WORKER_POLL_MS: '50', ALLOW_PRIVATE_NETWORK_TARGETS: 'true' },
      });
      ({ t, baseUrl } = dashboard);
      org = await signUpOrganization(t.http, 'Phone');

      // A user who owns a personal key: the list names them, not their usr_ id.
      const email = `priya-${Date.now().toString(36)}@example.test`;
      const created = await t.http
        .post('/v1/users')
        .set(org.auth)
        .send({ email, password: PASSWORD, name: OWNER_NAME, role: 'api_manager' })
        .expect(201);
      const token = (await t.http.post('/v1/auth/token').send({ email, password: PASSWORD }).expect(200)).body
        .access_token as string;
      owner = {
        id: created.body.id,
        email,
        token,
        auth: { Authorization: `Bearer ${token}` },
        name: OWNER_NAME,
      };
      personal = await createKey(t.http, owner.auth, {
        name: 'priya-personal',
        role: 'viewer',
        type: 'personal',
      });

      // A key with credits and an identity, used a few times: its row shows requests, credits, identity.
      identityId = (
        await t.http
          .post('/v1/identities')
          .set(org.auth)
          .send({ external_id: 'acme-phone', meta: { plan: 'pro' } })
          .expect(201)
      ).body.id;
      metered = await createKey(t.http, org.auth, {
        name: 'metered-service',
        role: 'developer',
        type: 'service',
        credits: { remaining: 500 },
        identity_id: identityId,
      });
      for (let i = 0; i < REQUESTS; i++) await t.http.get('/v1/agents').set(metered.auth).expect(200);

      // What the audit log shows before and after: a user's role, a policy, a key's name.
      await t.http.patch(`/v1/users/${owner.id}`).set(org.auth).send({ role: 'developer' }).expect(200);
      await t.http
        .patch('/v1/organization/policies')
        .set(org.auth)
        .send({ leak_response: 'notify' })
        .expect(200);
      await t.http
        .patch(`/v1/api-keys/${personal.id}`)
        .set(org.auth)
        .send({ name: 'priya-renamed' })
        .expect(200);

      // The other tables' material: a role, a team, a webhook with a delivery.
      await t.http
        .post('/v1/roles')
        .set(org.auth)
        .send({ role_name: 'key_auditor', permissions: { api_keys: ['read'], audit: ['read'] } })
        .expect(201);
      const team = (await t.http.post('/v1/teams').set(org.auth).send({ name: 'Platform' }).expect(201)).body;
      await t.http.post(`/v1/teams/${team.id}/members`).set(org.auth).send({ user_id: owner.id }).expect(200);
      webhookId = (
        await t.http
          .post('/v1/webhooks')
          .set(org.auth)
          .send({
            url: `http://127.0.0.1:9/hooks/${'a-long-path-segment-'.repeat(4)}`,
            events: ['key.created'],
            description: 'Billing sync',
          })
          .expect(201)
      ).body.id;
      await t.http.post(`/v1/webhooks/${webhookId}/test`).set(org.auth).expect(202);

      agentId = await runs.agent(t.http, org.auth, { name: AGENT_NAME });

      // A connected app: Priya's consent to an assistant, through the whole OAuth flow.
      const assistant = await OAuthTestClient.register(t.http, 'Phone Assistant');
      await assistant.accessToken(owner.email);

      // Usage is counted within seconds: wait until the API reports the key's requests before any page asks.
      const usage = await pollUntil(
        async () => (await t.http.get('/v1/usage').set(org.auth).expect(200)).body.data as Json[],
        (data) => data.some((row) => row.key_id === metered.id && row.requests === REQUESTS),
        { timeoutMs: 20_000, intervalMs: 200 },
      );
      expect(usage.value.find((row) => row.key_id === metered.id)?.requests).toBe(REQUESTS);

      phone = await signedInPage(dashboard, 'phone', org.email);
      await phone.setViewportSize(PHONE);
    }, 300_000);

    afterAll(async () => {
      await runs?.close();
      await dashboard?.close();
    });

    describe('the key list', () => {
      it("shows each key's requests in the last 24 hours, credits left and identity, as the API does", async () => {
        await phone.setViewportSize(DESKTOP);
        await open('/api-keys', 'API Keys');
        const keys = table('API keys');
        const apiKey = (await t.http.get(`/v1/api-keys/${metered.id}`).set(org.auth).expect(200)).body;
        const row = rowWith(keys, 'metered-service');
        const cell = (header: string) => row.locator(`td[data-label="${header}"]`);
        // The requests column fills in after the list, from a usage request of its own ('…' until then):
        // wait until every row has its count, then compare.
        await keys
          .locator('td[data-label="Requests (24 h)"]', { hasText: '…' })
          .first()
          .waitFor({ state: 'detached' });
        expect(await cell('Requests (24 h)').innerText()).toBe(String(REQUESTS));
        // Each request spent one credit: the list shows the key's balance as the API reports it.
        expect(apiKey.credits.remaining).toBe(500 - REQUESTS);
        expect(await cell('Credits').innerText()).toBe(String(apiKey.credits.remaining));
        expect(
          await cell('Identity').getByRole('link', { name: 'acme-phone', exact: true }).isVisible(),
        ).toBe(true);
        for (const header of ['Requests (24 h)', 'Credits', 'Identity']) {
          expect(await keys.getByRole('columnheader', { name: header, exact: true }).isVisible()).toBe(true);
        }
        // A key that made no request shows 0, one without credits "Unlimited", one without identity "—".
        const other = rowWith(keys, 'priya-renamed');
        expect(await other.locator('td[data-label="Requests (24 h)"]').innerText()).toBe('0');
        expect(await other.locator('td[data-label="Credits"]').innerText()).toBe('Unlimited');
        expect(await other.locator('td[data-label="Identity"]').innerText()).toBe('—');
        // Its owner by name, never by id.
        const type = await other.locator('td[data-label="Type"]').innerText();
        expect(type).toContain(OWNER_NAME);
        expect(type).not.toContain('usr_');
        // A laptop's width shows every column, the new ones included, without scrolling the table.
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'API Keys with usage, credits and identity');
        await screenshot(phone, 'api-keys-columns');
      });

      it('folds on a phone: name, status and actions in view, the other columns as lines under the name', async () => {
        await phone.setViewportSize(PHONE);
        await open('/api-keys', 'API Keys');
        const row = rowWith(table('API keys'), 'metered-service');
        const lines = await expectFolded(row, {
          visible: ['Name', 'Status', 'Actions'],
          folded: [
            'Role',
            'Type',
            'Requests (24 h)',
            'Credits',
            'Identity',
            'Start',
            'Rate limit',
            'Last used',
            'Expiration',
          ],
        });
        expect(lines).toMatchObject({
          Role: 'developer',
          'Requests (24 h)': String(REQUESTS),
          Credits: String(500 - REQUESTS),
          Identity: 'acme-phone',
        });
        expect(await row.getByRole('button', { name: 'Actions', exact: true }).isVisible()).toBe(true);
        expect(await row.getByText('active', { exact: true }).isVisible()).toBe(true);
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'API Keys (phone)');
        await screenshot(phone, 'phone/api-keys');
      });

      it("names a key's owner on its page", async () => {
        await open(`/api-keys/${personal.id}`, /priya-renamed/);
        const details = phone.getByRole('region', { name: 'Details' });
        await details.getByText(OWNER_NAME, { exact: true }).waitFor();
        expect(await details.innerText()).not.toContain(owner.id);
      });
    });

    describe('a new key', () => {
      it('shows beside its value how to use it: curl and the TypeScript client, with this server and the key', async () => {
        await open('/api-keys', 'API Keys');
        await phone.getByRole('button', { name: 'Create key', exact: true }).click();
        const form = phone.getByRole('dialog', { name: 'Create an API key' });
        await form.getByLabel('Name', { exact: true }).fill('snippet-key');
        await form.getByLabel('Role', { exact: true }).selectOption('developer');
        await form.getByRole('button', { name: 'Create', exact: true }).click();
        const field = phone.getByLabel('API key value', { exact: true });
        await field.waitFor();
        const value = await field.inputValue();

        const use = phone.getByRole('region', { name: 'Use this key' });
        const curl = use.getByRole('figure', { name: 'curl' }).locator('pre');
        const typescript = use.getByRole('figure', { name: 'TypeScript' }).locator('pre');
        const curlText = await curl.innerText();
        expect(curlText).toBe(`curl ${baseUrl}/v1/agents \\\n  -H "Authorization: Bearer ${value}"`);
        expect(await typescript.innerText()).toBe(
          [
            "import { createGatehouseClient } from '@gatehouse/client';",
            '',
            `const gatehouse = createGatehouseClient('${baseUrl}', '${value}');`,
            "const { data, error } = await gatehouse.GET('/v1/agents');",
            'console.log(error ?? data);',
          ].join('\n'),
        );

        // The curl command works as printed: run by a shell, it lists the agents the key may run.
        // Run asynchronously: the server answering it runs in this process.
        const run = await promisify(execFile)('bash', ['-c', `${curlText} --silent --show-error --fail`], {
          encoding: 'utf8',
          timeout: 30_000,
        });
        expect(run.stderr).toBe('');
        expect(JSON.parse(run.stdout).data.map((agent: Json) => agent.name)).toContain(AGENT_NAME);

        await use.getByRole('button', { name: 'Copy curl', exact: true }).click();
        await use.getByText('Copied.', { exact: true }).waitFor();
        expect(await inPage(phone, 'navigator.clipboard.readText()')).toBe(curlText);
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'key created, with its snippets');
        await screenshot(phone, 'phone/api-key-created', [field, use.locator('.snippet-secret')]);

        // Gone with the value once the view is left.
        await phone.getByRole('button', { name: 'Done', exact: true }).click();
        expect(await phone.getByRole('region', { name: 'Use this key' }).count()).toBe(0);
        expect(await inPage<string>(phone, 'document.body.innerHTML')).not.toContain(value);
      });
    });

    describe('the audit log', () => {
      const log = () => table('Audit log');
      const entry = (action: string) =>
        log()
          .getByRole('row')
          .filter({ has: phone.getByText(action, { exact: true }) })
          .first();

      it('folds on a phone: time and action in view, the actor by name and the details under them', async () => {
        await open('/audit-log', 'Audit log');
        const row = entry('user.updated');
        const lines = await expectFolded(row, { visible: ['Time', 'Action'], folded: ['Actor', 'Details'] });
        // The actor by name first (the signup's "Admin"), the email under it; never a bare id.
        expect(lines.Actor.split('\n')[0]).toBe('Admin');
        expect(lines.Actor).toContain(org.email);
        expect(lines.Actor).not.toMatch(/usr_\w+/);
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'Audit log (phone)');
        await screenshot(phone, 'phone/audit-log');
      });

      it('shows what changed as before → after: a role, a policy and a key', async () => {
        const changes = (action: string) => entry(action).getByRole('definition');
        const changeOf = async (action: string, field: string): Promise<string> => {
          const pairs = entry(action).locator('dl.changes > div');
          const texts = await pairs.allInnerTexts();
          const found = texts.find((text) => text.split('\n')[0] === field);
          return found ? found.split('\n').slice(1).join(' ').trim() : `no change of ${field} in ${texts}`;
        };
        expect(await changeOf('user.updated', 'role')).toBe('api_manager → developer');
        expect(await changeOf('organization.policies_updated', 'leak response')).toBe('revoke → notify');
        expect(await changeOf('key.updated', 'name')).toBe('priya-personal → priya-renamed');
        // What the API carries, shown, not invented: the entries' own values.
        const audit = (
          await t.http.get('/v1/audit-log').query({ action: 'user.updated' }).set(org.auth).expect(200)
        ).body.data[0];
        expect(audit.details).toMatchObject({ previous_role: 'api_manager', role: 'developer' });
        expect(await changes('user.updated').count()).toBeGreaterThan(0);
      });
    });

    describe('a task', () => {
      let held: HeldRun;

      it('is followed by the list without a reload, its agent by name, until it succeeds', async () => {
        held = await runs.begin(t.http, org.auth, agentId, { instruction: 'Summarise the quarter' });
        await t.http
          .post(`/v1/tasks/${held.taskId}/events`)
          .set(held.tokenAuth)
          .send({ type: 'progress', data: { message: 'Almost there', percent: 90 } })
          .expect(202);
        await open('/tasks', 'Tasks');
        const row = rowWith(table('Tasks'), held.taskId);
        await row.getByText('running', { exact: true }).waitFor();
        await row.getByText('90% done', { exact: true }).waitFor();
        const lines = await expectFolded(row, {
          visible: ['Task', 'Status'],
          folded: ['Instruction', 'Agent', 'Credits', 'Created'],
        });
        expect(lines).toMatchObject({ Instruction: 'Summarise the quarter', Agent: AGENT_NAME });
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'Tasks (phone)');
        await screenshot(phone, 'phone/tasks');

        // A mark in the page's memory: a reload would lose it.
        await inPage(phone, 'window.__stillTheSamePage = true');
        held.release();
        await row.getByText('succeeded', { exact: true }).waitFor();
        expect(await inPage<boolean>(phone, 'window.__stillTheSamePage === true')).toBe(true);
        expect(await row.getByText('90% done').count()).toBe(0);
        expect((await t.http.get(`/v1/tasks/${held.taskId}`).set(org.auth).expect(200)).body.status).toBe(
          'succeeded',
        );
      });

      it('shows no progress bar once it succeeded, only its last report, and its agent by name', async () => {
        await open(`/tasks/${held.taskId}`, `Task ${held.taskId}`);
        const summary = phone.getByRole('region', { name: 'Summary' });
        await summary.getByText('succeeded', { exact: true }).waitFor();
        await phone.getByText('No longer running. Its last report: Almost there').waitFor();
        expect(await phone.getByRole('progressbar').count()).toBe(0);
        expect(await summary.getByText(AGENT_NAME).count()).toBe(1);
        await expectNothingOverflows(phone);
        await screenshot(phone, 'phone/task-ended');
      });
    });

    describe('every other table on a phone', () => {
      it.each([
        ['/users', 'Users', 'Users', OWNER_NAME, ['Name', 'Status', 'Actions'], ['Email', 'Role']],
        ['/roles', 'Roles', 'Roles', 'key_auditor', ['Role', 'Actions'], ['Kind', 'Permissions']],
        [
          '/webhooks',
          'Webhooks',
          'Webhook endpoints',
          'a-long-path-segment',
          ['URL', 'Status', 'Actions'],
          ['Description', 'Events', 'Created'],
        ],
        [
          '/identities',
          'Identities',
          'Identities',
          'acme-phone',
          ['External ID', 'Credits'],
          ['Meta', 'Rate limit', 'Keys', 'Created'],
        ],
        [
          '/usage',
          'Usage',
          /Keys with the most requests/,
          'metered-service',
          ['Key', 'Requests'],
          ['Allowed', 'Denied', 'Credits spent'],
        ],
        [
          '/connected-apps',
          'Connected apps',
          'Connected apps',
          'Phone Assistant',
          ['App', 'Actions'],
          ['User', 'Permissions', 'For', 'Connected', 'Last used'],
        ],
      ] as const)(
        '%s: the row header in view, the rest folded under it',
        async (path, heading, caption, name, visible, folded) => {
          await open(path, heading);
          const row = rowWith(table(caption), name);
          await row.waitFor();
          await expectFolded(row, { visible: [...visible], folded: [...folded] });
          await expectNothingOverflows(phone);
          await expectAccessible(phone, `${path} (phone)`);
          await screenshot(phone, `phone/${path.slice(1)}`);
        },
      );

      it("an identity's keys and a key's audit log", async () => {
        await open(`/identities/${identityId}`, /acme-phone/);
        await expectFolded(rowWith(table('Keys of this identity'), 'metered-service'), {
          visible: ['Name', 'Status'],
          folded: ['Start', 'Last used'],
        });
        await expectNothingOverflows(phone);
        await screenshot(phone, 'phone/identity');

        await open(`/api-keys/${personal.id}`, /priya-renamed/);
        const updated = table('Audit log of this key')
          .getByRole('row')
          .filter({ has: phone.getByText('key.updated', { exact: true }) });
        await expectFolded(updated, { visible: ['Time', 'Action'], folded: ['Actor', 'Details'] });
        await expectNothingOverflows(phone);
      });

      it("a webhook's deliveries", async () => {
        await open(`/webhooks/${webhookId}`, /Deliveries|Webhook/);
        const row = table('Deliveries')
          .getByRole('row')
          .filter({ has: phone.getByRole('rowheader') })
          .first();
        await row.waitFor();
        await expectFolded(row, {
          visible: ['Event', 'Status', 'Actions'],
          folded: ['Attempts', 'Response', 'Last error', 'Next attempt', 'Created'],
        });
        await expectNothingOverflows(phone);
        await expectAccessible(phone, 'deliveries (phone)');
        await screenshot(phone, 'phone/webhook-deliveries');
      });

      it('teams, as cards: each team and its members in view', async () => {
        await open('/teams', 'Teams');
        const card = phone.getByRole('region', { name: 'Platform' });
        await card.getByText(`${OWNER_NAME} (${owner.email})`).waitFor();
        expect(
          await card.getByRole('button', { name: `Remove ${OWNER_NAME} from Platform` }).isVisible(),
        ).toBe(true);
        await expectNothingOverflows(phone);
        await screenshot(phone, 'phone/teams');
      });
    });

    // Declared last, so it runs after every page above has been used.
    it('logged no console error and threw no uncaught exception in any page', () => {
      expect(dashboard.errors).toEqual([]);
    });
  },
);
