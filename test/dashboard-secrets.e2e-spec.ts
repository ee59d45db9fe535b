import type { Locator, Page } from 'playwright-core';
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
import type { TestApp } from './support/test-app';

/**
 * The Secrets page (contract, "Model agents and provider secrets") in a real browser: create (the value
 * typed once into a password field, never shown), rename, replace the value, delete confirmed in a
 * dialog whose button is `Delete`. After each step the API is asked whether it agrees.
 */
describeInBrowser('test/dashboard-secrets.e2e-spec.ts')('Secrets page in a browser (Chromium)', () => {
  let dashboard: BrowserDashboard;
  let t: TestApp;
  let org: SignedUpOrganization;
  let page: Page;
  const value = 'sk-dashboard-VALUE-never-shown-0042';
  const replacement = 'sk-dashboard-VALUE-replaced-9931';

  const secrets = async (): Promise<Array<Record<string, any>>> =>
    (await t.http.get('/v1/secrets').set(org.auth).expect(200)).body.data;
  const table = () => page.getByRole('table', { name: 'Secrets' });
  const row = (name: string): Locator =>
    table()
      .getByRole('row')
      .filter({ has: page.getByRole('rowheader').filter({ hasText: name }) });

  beforeAll(async () => {
    dashboard = await startBrowserDashboard();
    t = dashboard.t;
    org = await signUpOrganization(t.http, 'Secrets page');
    page = await signedInPage(dashboard, 'administrator', org.email, '/settings');
    await pageShown(page, 'Settings');
  }, 300_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  it('is reached from the navigation and creates a secret whose value is never shown', async () => {
    await showNavigation(page);
    await navLink(page, 'Secrets').click();
    await pageShown(page, 'Secrets');
    await page.getByText('No secrets yet.', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Create secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create secret' });
    await dialog.getByLabel('Name').fill('openai-production');
    const field = dialog.getByLabel('Value');
    expect(await field.getAttribute('type')).toBe('password');
    await field.fill(value);
    await expectAccessible(page, 'the Create secret dialog');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await row('openai-production').waitFor();

    const [secret] = await secrets();
    expect(secret).toMatchObject({ name: 'openai-production', last4: value.slice(-4) });
    expect(await row('openai-production').innerText()).toContain(value.slice(-4));
    expect(await everythingShown(page)).not.toContain(value);
    expect(await page.content()).not.toContain(value);
    await expectAccessible(page, 'Secrets');
  });

  it('renames a secret and replaces its value', async () => {
    await row('openai-production').getByRole('button', { name: 'Rename' }).click();
    const rename = page.getByRole('dialog', { name: 'Rename openai-production' });
    await rename.getByLabel('Name').fill('openai-main');
    await rename.getByRole('button', { name: 'Rename', exact: true }).click();
    await rename.waitFor({ state: 'hidden' });
    await row('openai-main').waitFor();
    expect((await secrets()).map((secret) => secret.name)).toEqual(['openai-main']);

    await row('openai-main').getByRole('button', { name: 'Replace value' }).click();
    const replace = page.getByRole('dialog', { name: 'Replace the value of openai-main' });
    expect(await replace.getByLabel('Value').inputValue()).toBe('');
    await replace.getByLabel('Value').fill(replacement);
    await replace.getByRole('button', { name: 'Replace', exact: true }).click();
    await replace.waitFor({ state: 'hidden' });
    await row('openai-main')
      .filter({ hasText: replacement.slice(-4) })
      .waitFor();
    expect((await secrets())[0].last4).toBe(replacement.slice(-4));
    expect(await page.content()).not.toContain(replacement);
  });

  it('asks before deleting: Cancel keeps it, the dialog’s Delete removes it', async () => {
    await row('openai-main').getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete openai-main?' });
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await secrets()).length).toBe(1);

    await row('openai-main').getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByText('No secrets yet.', { exact: true }).waitFor();
    expect(await secrets()).toEqual([]);
  });
});
