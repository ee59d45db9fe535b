import type { Locator, Page } from 'playwright-core';
import { KeyLeaks } from '../src/api-keys/key-leaks';
import { createKey, type CreatedKey } from './support/keys';
import { createUser, SignedUpOrganization, signUpOrganization } from './support/factories';
import {
  BrowserDashboard,
  describeInBrowser,
  expectAccessible,
  expectNoHorizontalScroll,
  inPage,
  pageShown,
  PHONE,
  screenshot,
  signedInPage,
  startBrowserDashboard,
} from './support/dashboard-browser';
import type { TestApp } from './support/test-app';

/**
 * The API keys pages (contract, "Dashboard", and what was added later) in a real browser: the server-side
 * search and numbered pages over 60 keys, each row's Actions menu, editing a key's settings (only what
 * changed is sent), the API's refusals shown on the field they concern, Disable confirmed, Rotate not
 * offered on a disabled key, grace-period presets, leaked keys marked with where they were found, the
 * empty state of a new organization, a phone's width, axe-core on pages, dialogs and menus, and no
 * console error. After each step through the UI, the API is asked whether it agrees.
 */

type Json = Record<string, any>;

const BULK_KEYS = 60;
const PAGE_SIZE = 20;

/**
 * Set only while a test sends what the API refuses on purpose: the browser logs the 400 answer as a
 * console error, and the refusal shown on its field is what that test proves.
 */
let refusingOnPurpose = false;
const refusalOnPurpose = (text: string, url: string) =>
  refusingOnPurpose && /status of 400/.test(text) && /\/v1\/api-keys\/key_\w+$/.test(url);

describeInBrowser('test/dashboard-keys.e2e-spec.ts')('API keys pages in a browser (Chromium)', () => {
  let dashboard: BrowserDashboard;
  let t: TestApp;
  let org: SignedUpOrganization;
  let page: Page;
  const k: Record<string, CreatedKey> = {};

  const getKey = async (id: string): Promise<Json> =>
    (await t.http.get(`/v1/api-keys/${id}`).set(org.auth).expect(200)).body;
  const table = (on: Page = page) => on.getByRole('table', { name: 'API keys' });
  const bodyRows = (on: Page = page) => table(on).locator('tbody tr');
  const row = (name: string, on: Page = page): Locator =>
    on.getByRole('row').filter({ has: on.getByRole('link', { name, exact: true }) });
  const menuItem = (name: string, on: Page = page) => on.getByRole('menuitem', { name, exact: true });

  /** Opens a row's Actions menu and waits for it. */
  async function openMenu(name: string, on: Page = page): Promise<Locator> {
    await row(name, on).getByRole('button', { name: 'Actions', exact: true }).click();
    const menu = on.getByRole('menu');
    await menu.waitFor();
    return menu;
  }

  /** Shows the list of keys whose name or start matches `text`, as the search box does. */
  async function searchFor(text: string, expected: string): Promise<void> {
    await page.getByRole('searchbox', { name: 'Search keys' }).fill(text);
    await row(expected).waitFor();
    await pageShown(page, 'API Keys');
  }

  beforeAll(async () => {
    dashboard = await startBrowserDashboard();
    t = dashboard.t;
    org = await signUpOrganization(t.http, 'Keys pages');
    // Oldest first: the bulk keys fill pages 2 to 4, the keys the tests use are on page 1.
    for (let start = 0; start < BULK_KEYS; start += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          createKey(t.http, org.auth, { name: `bulk-${String(start + i).padStart(2, '0')}`, role: 'viewer' }),
        ),
      );
    }
    for (const name of ['needle-search', 'limits-edit', 'toggle-me', 'rotate-me', 'leaky']) {
      k[name] = await createKey(t.http, org.auth, { name, role: 'developer' });
    }
    page = await signedInPage(dashboard, 'administrator', org.email, '/api-keys', refusalOnPurpose);
    await pageShown(page, 'API Keys');
  }, 300_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  it('shows numbered pages over the API cursor: Next, Previous and the page number', async () => {
    await row('leaky').waitFor();
    expect(await bodyRows().count()).toBe(PAGE_SIZE);
    await page.getByText('Page 1', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Previous page' }).isDisabled()).toBe(true);

    // The API's second page, as the dashboard should show it.
    const first = (await t.http.get('/v1/api-keys').set(org.auth).expect(200)).body;
    const second = (
      await t.http.get('/v1/api-keys').query({ cursor: first.next_cursor }).set(org.auth).expect(200)
    ).body;
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2', { exact: true }).waitFor();
    await pageShown(page, 'API Keys');
    const shown = await table().locator('tbody th').allInnerTexts();
    expect(shown).toEqual(second.data.map((key: Json) => key.name));

    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 3', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 4', { exact: true }).waitFor();
    await pageShown(page, 'API Keys');
    // 65 keys: the last page holds the 5 oldest, and there is no page after it.
    expect(await bodyRows().count()).toBe(BULK_KEYS + Object.keys(k).length - 3 * PAGE_SIZE);
    await row('bulk-00').waitFor();
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);

    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('Page 3', { exact: true }).waitFor();
    await expectAccessible(page, 'API Keys, page 3');
    await page.getByRole('button', { name: 'Previous page' }).click();
    // Each step waits for its page: a second click while the first page loads is not what is tested here.
    await page.getByText('Page 2', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('Page 1', { exact: true }).waitFor();
    await row('leaky').waitFor();
  });

  it("searches on the server by name and by the start of a key's value, and back to page 1", async () => {
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2', { exact: true }).waitFor();

    await searchFor('NEEDLE', 'needle-search');
    expect(await table().locator('tbody th').allInnerTexts()).toEqual(['needle-search']);
    const api = (await t.http.get('/v1/api-keys').query({ search: 'NEEDLE' }).set(org.auth).expect(200)).body;
    expect(api.data.map((key: Json) => key.id)).toEqual([k['needle-search'].id]);
    // A search starts again at page 1, which is the only page of one key.
    expect(await page.getByText('Page 2', { exact: true }).count()).toBe(0);

    const start: string = k['rotate-me'].body.start;
    await searchFor(start, 'rotate-me');
    expect(await table().locator('tbody th').allInnerTexts()).toEqual(['rotate-me']);

    // bulk-10 to bulk-19: a part of the name, not only its beginning.
    await searchFor('ulk-1', 'bulk-19');
    expect(await bodyRows().count()).toBe(10);

    await page.getByRole('searchbox', { name: 'Search keys' }).fill('');
    await row('leaky').waitFor();
    await pageShown(page, 'API Keys');
    expect(await bodyRows().count()).toBe(PAGE_SIZE);
  });

  it('offers Edit, Rotate, Disable and Delete in an accessible menu that the keyboard can use', async () => {
    const button = row('limits-edit').getByRole('button', { name: 'Actions', exact: true });
    expect(await button.getAttribute('aria-haspopup')).toBe('menu');
    expect(await button.getAttribute('aria-expanded')).toBe('false');
    const menu = await openMenu('limits-edit');
    expect(await button.getAttribute('aria-expanded')).toBe('true');
    expect(await menu.getByRole('menuitem').allInnerTexts()).toEqual(['Edit', 'Rotate', 'Disable', 'Delete']);
    // The first item has the focus; the arrow keys move it, Escape closes and gives it back to the button.
    expect(await inPage(page, 'document.activeElement.textContent')).toBe('Edit');
    await page.keyboard.press('ArrowDown');
    expect(await inPage(page, 'document.activeElement.textContent')).toBe('Rotate');
    await page.keyboard.press('End');
    expect(await inPage(page, 'document.activeElement.textContent')).toBe('Delete');
    await expectAccessible(page, 'row actions menu');
    await screenshot(page, 'api-keys-row-menu');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    expect(await inPage(page, 'document.activeElement.getAttribute("aria-haspopup")')).toBe('menu');
  });

  it("edits a key's limits and description, sending only what changed, and the API agrees", async () => {
    await openMenu('limits-edit');
    await menuItem('Edit').click();
    const dialog = page.getByRole('dialog', { name: /Edit key/ });
    await dialog.waitFor();
    // The defaults are numbers from the service's configuration, not the word "default".
    const defaults = (await t.http.get('/v1/api-keys/defaults').set(org.auth).expect(200)).body;
    await dialog
      .getByText(`Empty: the default, ${defaults.rate_limit.requests_per_minute.toLocaleString('en-GB')}.`)
      .waitFor();
    expect(await dialog.getByLabel('Name', { exact: true }).inputValue()).toBe('limits-edit');

    await dialog.getByLabel('Requests per minute', { exact: true }).fill('120');
    await dialog.getByLabel('Requests per hour', { exact: true }).fill('5000');
    await dialog.getByLabel('Description', { exact: true }).fill('Edited in the browser');
    await expectAccessible(page, 'edit form');
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });

    const after = await getKey(k['limits-edit'].id);
    expect(after).toEqual(
      expect.objectContaining({
        description: 'Edited in the browser',
        rate_limit: { requests_per_minute: 120, requests_per_hour: 5000 },
        name: 'limits-edit',
        role: 'developer',
        allowed_ips: [],
        status: 'active',
      }),
    );
    // Only the changed settings were sent: the update's audit entry names exactly them.
    const audit = (
      await t.http
        .get(`/v1/api-keys/${k['limits-edit'].id}/audit-log`)
        .query({ action: 'key.updated' })
        .set(org.auth)
        .expect(200)
    ).body.data;
    expect(audit.map((entry: Json) => entry.details.fields)).toEqual([['description', 'rate_limit']]);
    // The row shows the key's own limits.
    await row('limits-edit').getByText('120/min · 5,000/h').waitFor();
  });

  it('shows the API refusing an invalid IP entry on the Allowed IPs field, naming the entry', async () => {
    await openMenu('limits-edit');
    await menuItem('Edit').click();
    const dialog = page.getByRole('dialog', { name: /Edit key/ });
    const ips = dialog.getByLabel('Allowed IPs', { exact: true });
    await ips.fill('10.0.0.1\n10.0.0.300\n2001:db8::/32');
    refusingOnPurpose = true;
    const message = dialog.getByText(/"10\.0\.0\.300"/);
    try {
      await dialog.getByRole('button', { name: 'Save', exact: true }).click();
      await message.waitFor();
    } finally {
      refusingOnPurpose = false;
    }
    expect(await ips.getAttribute('aria-invalid')).toBe('true');
    // The message is the field's own (read out with it), in words, not under the API's field name.
    const errorId = await message.getAttribute('id');
    expect((await ips.getAttribute('aria-describedby'))?.split(' ')).toContain(errorId);
    expect(await message.innerText()).toMatch(/^Not an IPv4 or IPv6 address or CIDR range/);
    expect(await message.innerText()).not.toContain('10.0.0.1"');
    expect(await dialog.getByText('allowed_ips').count()).toBe(0);
    // The field in error has the focus, so its message is what a screen reader reads next.
    expect(await ips.evaluate((element) => element === (globalThis as any).document.activeElement)).toBe(
      true,
    );
    await expectAccessible(page, 'edit form with a refused field');
    await screenshot(page, 'api-key-edit-refused');

    expect((await getKey(k['limits-edit'].id)).allowed_ips).toEqual([]);
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
  });

  it('checks what it can before sending: a whole number, named, beside its field', async () => {
    await openMenu('limits-edit');
    await menuItem('Edit').click();
    const dialog = page.getByRole('dialog', { name: /Edit key/ });
    const perMinute = dialog.getByLabel('Requests per minute', { exact: true });
    await perMinute.fill('0');
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.getByText('Requests per minute must be a whole number of at least 1; “0” is not.').waitFor();
    expect(await perMinute.getAttribute('aria-invalid')).toBe('true');
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await getKey(k['limits-edit'].id)).rate_limit.requests_per_minute).toBe(120);
  });

  it('asks before disabling: Cancel leaves the key active, Disable disables it', async () => {
    const id = k['toggle-me'].id;
    await openMenu('toggle-me');
    await menuItem('Disable').click();
    const confirm = page.getByRole('dialog', { name: /Disable key/ });
    await confirm.waitFor();
    await expectAccessible(page, 'disable confirmation');
    await confirm.getByRole('button', { name: 'Cancel', exact: true }).click();
    await confirm.waitFor({ state: 'detached' });
    expect(await getKey(id)).toEqual(expect.objectContaining({ status: 'active', enabled: true }));

    await openMenu('toggle-me');
    await menuItem('Disable').click();
    await confirm.getByRole('button', { name: 'Disable', exact: true }).click();
    await confirm.waitFor({ state: 'detached' });
    await row('toggle-me').getByText('disabled', { exact: true }).waitFor();
    expect(await getKey(id)).toEqual(expect.objectContaining({ status: 'disabled', enabled: false }));
    expect((await t.http.get('/v1/auth/verify').set(k['toggle-me'].auth)).status).toBe(401);
  });

  it('does not offer Rotate on a disabled key, and enables it again', async () => {
    const menu = await openMenu('toggle-me');
    expect(await menu.getByRole('menuitem').allInnerTexts()).toEqual(['Edit', 'Enable', 'Delete']);
    await menuItem('Enable').click();
    await row('toggle-me').getByText('active', { exact: true }).waitFor();
    expect(await getKey(k['toggle-me'].id)).toEqual(expect.objectContaining({ status: 'active' }));

    // Neither on the key's own page while it is disabled.
    await t.http
      .patch(`/v1/api-keys/${k['toggle-me'].id}`)
      .set(org.auth)
      .send({ enabled: false })
      .expect(200);
    await row('toggle-me').getByRole('link').click();
    await pageShown(page, /toggle-me/);
    await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Rotate', exact: true }).count()).toBe(0);
    await page.goBack();
    await pageShown(page, 'API Keys');
  });

  it('rotates with the 1 hour preset: the old value works for about an hour more', async () => {
    await openMenu('rotate-me');
    await menuItem('Rotate').click();
    const dialog = page.getByRole('dialog', { name: /Rotate key/ });
    const grace = dialog.getByRole('group', { name: 'Grace period' });
    // count() does not wait: the dialog is shown first.
    await grace.waitFor();
    for (const preset of ['None', '1 hour', '24 hours', '7 days', 'Other']) {
      expect(await grace.getByRole('radio', { name: preset, exact: true }).count()).toBe(1);
    }
    // Other: a number and a unit.
    await grace.getByRole('radio', { name: 'Other', exact: true }).check();
    await dialog.getByLabel('Grace period amount', { exact: true }).waitFor();
    expect(await dialog.getByLabel('Grace period unit', { exact: true }).count()).toBe(1);
    await expectAccessible(page, 'rotate dialog');
    await grace.getByRole('radio', { name: '1 hour', exact: true }).check();

    const before = Date.now();
    await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
    // The same dialog, now titled "Key … rotated", shows the new value once.
    const rotated = page.getByRole('dialog', { name: /rotated/ });
    const field = rotated.getByLabel('New key value', { exact: true });
    await field.waitFor();
    const newValue = await field.inputValue();

    const after = await getKey(k['rotate-me'].id);
    const expiresIn = Date.parse(after.previous_key_expires_at) - before;
    expect(expiresIn).toBeGreaterThan(3_600_000 - 60_000);
    expect(expiresIn).toBeLessThanOrEqual(3_600_000 + 60_000);
    expect((await t.http.get('/v1/auth/verify').set(k['rotate-me'].auth)).status).toBe(200);
    expect((await t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${newValue}`)).status).toBe(200);
    await rotated.getByRole('button', { name: 'Done', exact: true }).click();
    await rotated.waitFor({ state: 'detached' });
  });

  it('marks a leaked key with where it was found, in the table and on its page', async () => {
    const url = 'https://github.com/acme/app/blob/0123abc/config.py';
    // GitHub's signed report is tested over HTTP in leaked-keys.e2e-spec.ts; here, what the pages show.
    await t.app.get(KeyLeaks).report('github', [{ value: k.leaky.key, url }]);
    expect(await getKey(k.leaky.id)).toEqual(
      expect.objectContaining({ status: 'revoked', leaked_at: expect.any(String) }),
    );

    await page.reload();
    await pageShown(page, 'API Keys');
    const leakyRow = row('leaky');
    await leakyRow.getByText('leaked', { exact: true }).waitFor();
    const link = leakyRow.getByRole('link', { name: url });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(url);
    // Nothing changes a revoked key: Delete is all its menu offers.
    const menu = await openMenu('leaky');
    expect(await menu.getByRole('menuitem').allInnerTexts()).toEqual(['Delete']);
    await page.keyboard.press('Escape');

    await leakyRow.getByRole('link', { name: 'leaky', exact: true }).click();
    await pageShown(page, /leaky/);
    await page.getByRole('heading', { name: /reported leaked/ }).waitFor();
    expect(await page.getByRole('link', { name: url }).getAttribute('href')).toBe(url);
    await expectAccessible(page, 'leaked key page');
    await screenshot(page, 'api-key-leaked');
    await page.goBack();
    await pageShown(page, 'API Keys');
  });

  it("sets a key's identity from a select of the organization's identities, and links to it", async () => {
    const identity = (
      await t.http.post('/v1/identities').set(org.auth).send({ external_id: 'customer-42' }).expect(201)
    ).body;
    await openMenu('needle-search');
    await menuItem('Edit').click();
    const dialog = page.getByRole('dialog', { name: /Edit key/ });
    const select = dialog.getByLabel('Identity', { exact: true });
    await select.locator('option', { hasText: 'customer-42' }).waitFor({ state: 'attached' });
    await select.selectOption({ label: 'customer-42' });
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await getKey(k['needle-search'].id)).identity).toEqual(
      expect.objectContaining({ id: identity.id, external_id: 'customer-42' }),
    );

    await row('needle-search').getByRole('link', { name: 'needle-search' }).click();
    await pageShown(page, /needle-search/);
    const link = page.getByRole('link', { name: 'customer-42', exact: true });
    expect(await link.getAttribute('href')).toBe(`/dashboard/identities/${identity.id}`);
    await expectAccessible(page, 'key page');
    await page.goBack();
    await pageShown(page, 'API Keys');
  });

  it('offers no control the user may not use: a role that may update keys but not delete them', async () => {
    await t.http
      .post('/v1/roles')
      .set(org.auth)
      .send({ role_name: 'key_editor', permissions: { api_keys: ['read', 'update'] } })
      .expect(201);
    const editor = await createUser(t.http, { auth: org.auth }, 'key_editor');
    const editorPage = await signedInPage(dashboard, 'key editor', editor.email);
    await pageShown(editorPage, 'API Keys');
    expect(await editorPage.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    const menu = await openMenu('limits-edit', editorPage);
    expect(await menu.getByRole('menuitem').allInnerTexts()).toEqual(['Edit', 'Rotate', 'Disable']);
    await editorPage.keyboard.press('Escape');
    await editorPage.context().close();
  });

  it('offers only the roles a user may give a key: an api_manager is not offered administrator', async () => {
    const manager = await createUser(t.http, { auth: org.auth }, 'api_manager');
    const managerPage = await signedInPage(dashboard, 'api manager', manager.email);
    await pageShown(managerPage, 'API Keys');
    await managerPage.getByRole('button', { name: 'Create key', exact: true }).click();
    const dialog = managerPage.getByRole('dialog', { name: 'Create an API key' });
    const role = dialog.getByLabel('Role', { exact: true });
    // Filtered once the organization's roles (with their permissions) have loaded.
    await managerPage.waitForFunction(
      () =>
        !Array.from((globalThis as any).document.querySelectorAll('dialog select option')).some(
          (option: any) => option.textContent === 'administrator',
        ),
    );
    const offered = await role.locator('option').allInnerTexts();
    expect(offered).toEqual(expect.arrayContaining(['viewer', 'api_manager', 'key_editor']));
    expect(offered).not.toContain('developer');
    // The API agrees: a key with a role beyond the manager's own permissions is refused.
    const refused = await t.http
      .post('/v1/api-keys')
      .set(manager.auth)
      .send({ name: 'too much', role: 'administrator', type: 'service' });
    expect(refused.status).toBe(403);
    await managerPage.context().close();
  });

  it('offers Create key to a new organization that has no keys yet', async () => {
    const fresh = await signUpOrganization(t.http, 'Empty keys');
    const freshPage = await signedInPage(dashboard, 'new organization', fresh.email);
    await pageShown(freshPage, 'API Keys');
    await freshPage.getByRole('heading', { name: 'No keys yet' }).waitFor();
    expect(await freshPage.getByRole('table', { name: 'API keys' }).count()).toBe(0);
    await expectAccessible(freshPage, 'empty API Keys');
    await freshPage.getByRole('button', { name: 'Create key', exact: true }).click();
    const dialog = freshPage.getByRole('dialog', { name: 'Create an API key' });
    await dialog.waitFor();
    await dialog.getByLabel('Name', { exact: true }).fill('first-key');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await freshPage.getByLabel('API key value', { exact: true }).waitFor();
    await row('first-key', freshPage).waitFor();
    const listed = (await t.http.get('/v1/api-keys').set(fresh.auth).expect(200)).body.data;
    expect(listed.map((key: Json) => key.name)).toEqual(['first-key']);
    await freshPage.context().close();
  });

  it("keeps a phone's page from scrolling sideways, with each row's actions reachable", async () => {
    const phone = await signedInPage(dashboard, 'phone', org.email);
    await phone.setViewportSize(PHONE);
    await pageShown(phone, 'API Keys');
    await row('limits-edit', phone).waitFor();
    await expectNoHorizontalScroll(phone);

    const menu = await openMenu('limits-edit', phone);
    for (const item of ['Edit', 'Rotate', 'Disable', 'Delete']) {
      expect(await menuItem(item, phone).isVisible()).toBe(true);
    }
    // The menu stays inside the window.
    const box = await menu.boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(PHONE.width);
    await expectNoHorizontalScroll(phone);
    await menuItem('Edit', phone).click();
    const dialog = phone.getByRole('dialog', { name: /Edit key/ });
    await dialog.getByLabel('Requests per minute', { exact: true }).waitFor();
    await expectNoHorizontalScroll(phone);
    await screenshot(phone, 'api-keys-phone-edit');
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
    await phone.context().close();
  });

  // Declared last, so it runs after every page above has been used.
  it('logged no console error and threw no uncaught exception in any page', () => {
    expect(dashboard.errors).toEqual([]);
  });
});
