import type { Locator, Page } from 'playwright-core';
import { CreatedUser, createUser, SignedUpOrganization, signUpOrganization } from './support/factories';
import {
  BrowserDashboard,
  describeInBrowser,
  DESKTOP,
  expectAccessible,
  expectFolded,
  expectNothingOverflows,
  navLink,
  pageShown,
  PHONE,
  screenshot,
  showNavigation,
  signedInPage,
  startBrowserDashboard,
} from './support/dashboard-browser';
import { pollUntil } from './support/keys';
import { OAuthTestClient } from './support/oauth-flow';
import type { TestApp } from './support/test-app';

/**
 * The Connected apps page (contract, "AI assistants: MCP and OAuth 2.1": "a `Connected apps` link in the
 * navigation opens a page that lists the grants (client, user, permissions, last used) with `Revoke`
 * (confirmed in a dialog whose button is `Revoke`)") in a real browser. A grant is made by the whole
 * OAuth flow (registration, sign-in, consent, code exchange); after each step through the page, the API
 * is asked whether it agrees, and the app's token is tried.
 */

type Json = Record<string, any>;

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/**
 * Set only while a test has the page revoke what is already gone: the browser logs the 404 answer as a
 * console error, and the refusal shown in the dialog is what that test proves.
 */
let refusingOnPurpose = false;
const refusalOnPurpose = (text: string, url: string) =>
  refusingOnPurpose && /status of 404/.test(text) && /\/v1\/oauth\/grants\/grant_\w+$/.test(url);

describeInBrowser('test/dashboard-connected-apps.e2e-spec.ts')(
  'Connected apps page in a browser (Chromium)',
  () => {
    let dashboard: BrowserDashboard;
    let t: TestApp;
    let org: SignedUpOrganization;
    let member: CreatedUser;
    let assistant: OAuthTestClient;
    let token: string;
    let page: Page;

    const grantsOf = async (auth: { Authorization: string }): Promise<Json[]> =>
      (await t.http.get('/v1/oauth/grants').set(auth).expect(200)).body.data;
    const table = (on: Page = page) => on.getByRole('table', { name: 'Connected apps' });
    const row = (app: string, on: Page = page): Locator =>
      table(on)
        .getByRole('row')
        .filter({ has: on.getByRole('rowheader').filter({ hasText: app }) });
    const cell = (rowLocator: Locator, header: string) => rowLocator.locator(`td[data-label="${header}"]`);

    async function openFromNavigation(on: Page = page): Promise<void> {
      await showNavigation(on);
      await navLink(on, 'Connected apps').click();
      await pageShown(on, 'Connected apps');
    }

    beforeAll(async () => {
      dashboard = await startBrowserDashboard();
      t = dashboard.t;
      org = await signUpOrganization(t.http, 'Connected apps');
      member = await createUser(t.http, org, 'developer');
      // The whole flow as the member: registration, sign-in, consent, the code exchanged for a token.
      assistant = await OAuthTestClient.register(t.http, 'My Assistant');
      token = await assistant.accessToken(member.email);
      // Used once, so that the grant has a last use to show (written off the request's path: awaited here).
      await t.http.get('/v1/agents').set(bearer(token)).expect(200);
      await pollUntil(
        () => grantsOf(org.auth),
        (grants) => grants.some((grant) => grant.last_used_at !== null),
      );
      page = await signedInPage(dashboard, 'administrator', org.email, '/settings', refusalOnPurpose);
      await pageShown(page, 'Settings');
    }, 300_000);

    afterAll(async () => {
      await dashboard?.close();
    });

    it('is reached from the navigation and lists the grant: the app, its user, permissions and last use', async () => {
      await openFromNavigation();
      expect(new URL(page.url()).pathname).toBe('/dashboard/connected-apps');
      const [grant] = (await grantsOf(org.auth)).filter((g) => g.client.client_id === assistant.clientId);
      expect(grant).toMatchObject({
        user_id: member.id,
        client: { client_name: 'My Assistant' },
        scopes: ['agents:read', 'tasks:read'],
      });
      expect(grant.last_used_at).toEqual(expect.any(String));

      const shown = row('My Assistant');
      await shown.waitFor();
      expect(await table().locator('tbody tr').count()).toBe(1);
      // The client by its registered name, its client_id under it.
      expect(await shown.getByRole('rowheader').innerText()).toContain(assistant.clientId);
      // The user by name and email, never by bare id.
      const user = await cell(shown, 'User').innerText();
      expect(user).toContain('A developer');
      expect(user).toContain(member.email);
      expect(user).not.toContain(member.id);
      expect(await cell(shown, 'Permissions').innerText()).toBe('agents:read, tasks:read');
      expect(await cell(shown, 'For').innerText()).toBe('REST API');
      // The last use the API reports, as a time.
      expect(await cell(shown, 'Last used').locator('time').getAttribute('datetime')).toBe(
        grant.last_used_at,
      );
      expect(await cell(shown, 'Connected').locator('time').getAttribute('datetime')).toBe(grant.created_at);
      for (const header of ['App', 'User', 'Permissions', 'Last used', 'Actions']) {
        expect(await table().getByRole('columnheader', { name: header, exact: true }).isVisible()).toBe(true);
      }
      await expectNothingOverflows(page);
      await expectAccessible(page, 'Connected apps');
      await screenshot(page, 'connected-apps');
    });

    it('asks before revoking: Cancel keeps the grant and its token working', async () => {
      await row('My Assistant').getByRole('button', { name: 'Revoke', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Revoke My Assistant?' });
      await dialog.waitFor();
      expect(await dialog.innerText()).toContain('A developer');
      await expectAccessible(page, 'the Revoke dialog');
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });
      await row('My Assistant').waitFor();
      expect((await grantsOf(member.auth)).length).toBe(1);
      await t.http.get('/v1/agents').set(bearer(token)).expect(200);
    });

    it("revokes once confirmed with the dialog's Revoke: the row is gone and the app's token refused", async () => {
      await row('My Assistant').getByRole('button', { name: 'Revoke', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Revoke My Assistant?' });
      await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });
      await row('My Assistant').waitFor({ state: 'detached' });
      await page.getByText('No connected apps.', { exact: true }).waitFor();
      await pageShown(page, 'Connected apps');

      expect(await grantsOf(org.auth)).toEqual([]);
      expect(await grantsOf(member.auth)).toEqual([]);
      const refused = await t.http.get('/v1/agents').set(bearer(token));
      expect(refused.status).toBe(401);
      await expectAccessible(page, 'Connected apps, empty');
    });

    it('keeps the API refusal in the dialog when the grant ended meanwhile', async () => {
      const again = await assistant.accessToken(member.email);
      await page.reload();
      await pageShown(page, 'Connected apps');
      await row('My Assistant').getByRole('button', { name: 'Revoke', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Revoke My Assistant?' });
      await dialog.waitFor();
      // Revoked by its user while the administrator's dialog is open.
      const [grant] = await grantsOf(member.auth);
      await t.http.delete(`/v1/oauth/grants/${grant.id}`).set(member.auth).expect(204);

      refusingOnPurpose = true;
      try {
        await dialog.getByRole('button', { name: 'Revoke', exact: true }).click();
        await dialog.getByRole('alert').getByText('The grant was not found.').waitFor();
      } finally {
        refusingOnPurpose = false;
      }
      expect(await dialog.isVisible()).toBe(true);
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect((await t.http.get('/v1/agents').set(bearer(again))).status).toBe(401);
    });

    it("shows a member only their own apps, with Revoke; someone without any sees 'No connected apps'", async () => {
      // One grant each: the member's and the administrator's own.
      const notes = await OAuthTestClient.register(t.http, 'Notes Helper');
      const memberToken = await notes.accessToken(member.email, { scope: 'tasks:read' });
      const adminToken = await assistant.accessToken(org.email);

      const memberPage = await signedInPage(dashboard, 'developer', member.email, '/tasks');
      await pageShown(memberPage, 'Tasks');
      await openFromNavigation(memberPage);
      await row('Notes Helper', memberPage).waitFor();
      expect(await table(memberPage).locator('tbody tr').count()).toBe(1);
      expect(await cell(row('Notes Helper', memberPage), 'Permissions').innerText()).toBe('tasks:read');
      expect(await cell(row('Notes Helper', memberPage), 'Last used').innerText()).toBe('Never');
      await expectAccessible(memberPage, 'Connected apps (developer)');

      // The member revokes their own: the administrator's grant lives on.
      await row('Notes Helper', memberPage).getByRole('button', { name: 'Revoke', exact: true }).click();
      await memberPage
        .getByRole('dialog', { name: 'Revoke Notes Helper?' })
        .getByRole('button', { name: 'Revoke', exact: true })
        .click();
      await memberPage.getByText('No connected apps.', { exact: true }).waitFor();
      expect((await t.http.get('/v1/agents').set(bearer(memberToken))).status).toBe(401);
      await t.http.get('/v1/agents').set(bearer(adminToken)).expect(200);
      expect((await grantsOf(org.auth)).map((g) => g.user_id)).toEqual([org.userId]);

      // A viewer who connected nothing: the link is there, and the page says there is nothing.
      const viewer = await createUser(t.http, org, 'viewer');
      const viewerPage = await signedInPage(dashboard, 'viewer', viewer.email, '/tasks');
      await pageShown(viewerPage, 'Tasks');
      await openFromNavigation(viewerPage);
      await viewerPage.getByText('No connected apps.', { exact: true }).waitFor();
      expect(await table(viewerPage).locator('tbody tr').count()).toBe(0);
    });

    it('fits a phone: the app and Revoke in view, the rest folded under it, nothing off to the right', async () => {
      const small = await signedInPage(dashboard, 'phone', org.email, '/settings');
      await small.setViewportSize(PHONE);
      await pageShown(small, 'Settings');
      await openFromNavigation(small);
      const shown = row('My Assistant', small);
      await shown.waitFor();
      const lines = await expectFolded(shown, {
        visible: ['App', 'Actions'],
        folded: ['User', 'Permissions', 'For', 'Connected', 'Last used'],
      });
      expect(lines).toMatchObject({
        Permissions: 'agents:read, tasks:read',
        'Last used': expect.any(String),
      });
      expect(lines.User).toContain('Admin');
      expect(await shown.getByRole('button', { name: 'Revoke', exact: true }).isVisible()).toBe(true);
      await expectNothingOverflows(small);
      await expectAccessible(small, 'Connected apps (phone)');
      await screenshot(small, 'phone/connected-apps');
      await small.setViewportSize(DESKTOP);
      await expectNothingOverflows(small);
    });

    // Declared last, so it runs after every page above has been used.
    it('logged no console error and threw no uncaught exception in any page', () => {
      expect(dashboard.errors).toEqual([]);
    });
  },
);
