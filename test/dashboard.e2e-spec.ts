import type { Page } from 'playwright-core';
import { UsageCounter } from '../src/usage/usage-counter';
import { createKey } from './support/keys';
import { CreatedUser, createUser, SignedUpOrganization, signUpOrganization } from './support/factories';
import {
  BrowserDashboard,
  describeInBrowser,
  DESKTOP,
  everythingShown,
  expectAccessible,
  expectNoHorizontalScroll,
  inPage,
  navLink,
  pageShown,
  PHONE,
  screenshot,
  showNavigation,
  signInThroughForm,
  startBrowserDashboard,
} from './support/dashboard-browser';
import type { TestApp } from './support/test-app';

/**
 * The dashboard (contract, "Dashboard") in a real browser: the Vite build served by the app at
 * /dashboard, driven through Chromium with playwright-core by its visible labels, as a user would.
 * Sign-in, the navigation, a key's whole life through the UI with the API checked after each step, the
 * value shown once and found nowhere after a reload, a viewer's narrower UI, sign-out ending the session
 * on the server, axe-core on every page, two layouts, and no console error anywhere.
 * The harness (build, Chromium, axe-core, screenshots) is test/support/dashboard-browser.ts.
 */

/**
 * Set only while the sign-out test replays a revoked session cookie on purpose: the browser logs the
 * server's 401 to it as a console error, which is what that step proves.
 */
let replayingRevokedCookie = false;
const revokedCookieReplay = (text: string, url: string) =>
  replayingRevokedCookie && /status of 401/.test(text) && url.endsWith('/v1/auth/session/refresh');

describeInBrowser('test/dashboard.e2e-spec.ts')('dashboard in a browser (Chromium)', () => {
  let dashboard: BrowserDashboard;
  let t: TestApp;
  let baseUrl: string;
  let org: SignedUpOrganization;
  let admin: CreatedUser;
  let viewer: CreatedUser;

  const openPage = (who: string): Promise<Page> => dashboard.openPage(who, { expected: revokedCookieReplay });
  const verify = (value: string) => t.http.get('/v1/auth/verify').set('Authorization', `Bearer ${value}`);
  const getKey = (id: string) => t.http.get(`/v1/api-keys/${id}`).set(admin.auth);

  beforeAll(async () => {
    dashboard = await startBrowserDashboard();
    ({ t, baseUrl } = dashboard);
    org = await signUpOrganization(t.http, 'Dashboard');
    admin = await createUser(t.http, org, 'administrator');
    viewer = await createUser(t.http, org, 'viewer');
    // A list that looks lived-in, for the screenshots and the layout checks.
    await createKey(t.http, admin.auth, { name: 'billing-service', role: 'developer', type: 'service' });
    await createKey(t.http, admin.auth, { name: 'nightly-import', role: 'viewer' });
  }, 300_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  describe('an administrator', () => {
    let page: Page;
    const keyName = `ci-robot-${Date.now().toString(36)}`;
    let keyId: string;
    let keyValue: string;
    let rotatedValue: string;
    const keyRow = () =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name: keyName, exact: true }) });

    beforeAll(async () => {
      page = await openPage('administrator');
    });

    it('signs in with the fields Email and Password and the button Sign in, and sees who is signed in', async () => {
      await page.goto(`${baseUrl}/dashboard`);
      await pageShown(page, /Sign in/);
      await expectAccessible(page, 'sign-in');
      await screenshot(page, 'sign-in');

      await signInThroughForm(page, admin.email);
      await pageShown(page, 'API Keys');
      // In the top bar (the key list names the keys' owners too).
      const banner = page.getByRole('banner');
      await banner.getByText('A administrator', { exact: true }).waitFor();
      await banner.getByText(admin.email, { exact: true }).waitFor();
      expect(await page.getByLabel('Password', { exact: true }).count()).toBe(0);
    });

    it('keeps the session in an httpOnly, SameSite=Strict cookie that no page script can read', async () => {
      const cookies = await page.context().cookies(`${baseUrl}/v1/auth/session/refresh`);
      expect(cookies).toEqual([
        expect.objectContaining({ httpOnly: true, sameSite: 'Strict', path: '/v1/auth/session' }),
      ]);
      expect(await inPage(page, 'document.cookie')).toBe('');
      expect(await inPage(page, 'localStorage.length + sessionStorage.length')).toBe(0);
    });

    it('follows Settings → Users and Teams → API Keys, each link leading to its page', async () => {
      await navLink(page, 'Settings').click();
      await pageShown(page, 'Settings');
      await navLink(page, 'Users and Teams').click();
      await pageShown(page, 'Users and Teams');
      await navLink(page, 'API Keys').click();
      await pageShown(page, 'API Keys');
      expect(new URL(page.url()).pathname).toBe('/dashboard/api-keys');

      for (const name of [
        'Users',
        'Teams',
        'Roles',
        'Webhooks',
        'Audit log',
        'Settings',
        'Users and Teams',
      ]) {
        expect(await navLink(page, name).isVisible()).toBe(true);
      }
      // The table's columns and the two filters.
      for (const column of ['Name', 'Role', 'Type', 'Status', 'Start', 'Last used', 'Expiration']) {
        expect(await page.getByRole('columnheader', { name: column, exact: true }).count()).toBe(1);
      }
      expect(await page.getByRole('combobox', { name: /status/i }).count()).toBe(1);
      expect(await page.getByRole('combobox', { name: /type/i }).count()).toBe(1);
      await keyRow().waitFor({ state: 'detached' });
      await page.getByRole('link', { name: 'billing-service', exact: true }).waitFor();
      await expectAccessible(page, 'API Keys');
      await screenshot(page, 'api-keys');
    });

    it('filters the list by status and by type', async () => {
      await page.getByRole('combobox', { name: /type/i }).selectOption('service');
      await page.getByRole('link', { name: 'nightly-import', exact: true }).waitFor({ state: 'detached' });
      expect(await page.getByRole('link', { name: 'billing-service', exact: true }).count()).toBe(1);
      await page.getByRole('combobox', { name: /type/i }).selectOption('');
      await page.getByRole('combobox', { name: /status/i }).selectOption('disabled');
      await page.getByRole('link', { name: 'billing-service', exact: true }).waitFor({ state: 'detached' });
      await page.getByRole('combobox', { name: /status/i }).selectOption('');
      await page.getByRole('link', { name: 'nightly-import', exact: true }).waitFor();
    });

    it('creates a key through the form, shows its value once and copies it', async () => {
      await page.getByRole('button', { name: 'Create key', exact: true }).click();
      const form = page.getByRole('dialog');
      await form.waitFor();
      const missing: string[] = [];
      for (const label of [
        'Name',
        'Description',
        'Role',
        'Type',
        'Expiration',
        'Allowed IPs',
        'Allowed referrers',
        'Requests per minute',
        'Requests per hour',
        'Credits',
        'Refill',
        'Refill amount',
        'Rotate automatically',
        'Rotation days',
        'Hide credentials',
        'Enabled',
        'Meta (JSON)',
      ]) {
        if ((await form.getByLabel(label, { exact: true }).count()) !== 1) missing.push(label);
      }
      expect(missing).toEqual([]);
      // The rotation policy's grace period: presets, or a number with a unit.
      const grace = form.getByRole('group', { name: 'Grace period' });
      for (const preset of ['None', '1 hour', '24 hours', '7 days', 'Other']) {
        expect(await grace.getByRole('radio', { name: preset, exact: true }).count()).toBe(1);
      }

      await form.getByLabel('Name', { exact: true }).fill(keyName);
      await form.getByLabel('Description', { exact: true }).fill('Created by the browser test');
      await form.getByLabel('Role', { exact: true }).selectOption('developer');
      await form.getByLabel('Type', { exact: true }).selectOption('service');
      await form.getByLabel('Credits', { exact: true }).fill('100');
      await form.getByLabel('Allowed IPs', { exact: true }).fill('127.0.0.1');
      await expectAccessible(page, 'create form');
      await screenshot(page, 'create-key-form');

      await form.getByRole('button', { name: 'Create', exact: true }).click();
      const field = page.getByLabel('API key value', { exact: true });
      await field.waitFor();
      expect(await field.getAttribute('readonly')).not.toBeNull();
      keyValue = await field.inputValue();
      expect(keyValue).toMatch(/^sk_\w{20,}$/);
      // What the checks after the reload look through does hold the value now.
      expect(await everythingShown(page)).toContain(keyValue);

      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.getByText('Copied to the clipboard.').waitFor();
      expect(await inPage(page, 'navigator.clipboard.readText()')).toBe(keyValue);
      // The "use this key" snippets hold the value too.
      await screenshot(page, 'api-key-created', [field, page.locator('.snippet-secret')]);

      // The API agrees: the value works, and the key is what the form asked for.
      expect((await verify(keyValue)).status).toBe(200);
      const list = await t.http.get('/v1/api-keys').query({ limit: 100 }).set(admin.auth).expect(200);
      const created = list.body.data.find((key: { name: string }) => key.name === keyName);
      expect(created).toEqual(
        expect.objectContaining({
          role: 'developer',
          type: 'service',
          status: 'active',
          description: 'Created by the browser test',
          allowed_ips: ['127.0.0.1'],
          credits: expect.objectContaining({ remaining: expect.any(Number) }),
        }),
      );
      expect(created.credits.remaining).toBeLessThanOrEqual(100);
      expect(keyValue.startsWith(created.start)).toBe(true);
      keyId = created.id;
      await keyRow().waitFor();
    });

    it('shows the value nowhere after a reload, and the session survives it', async () => {
      await page.reload();
      await pageShown(page, 'API Keys');
      await keyRow().waitFor();
      expect(await page.getByLabel('Email', { exact: true }).count()).toBe(0);

      expect(await everythingShown(page)).not.toContain(keyValue);
      const storage = await inPage<string>(
        page,
        'JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])',
      );
      expect(storage).toBe('[[],[]]');
      expect(await inPage(page, 'document.cookie')).toBe('');
      expect(page.url()).not.toContain(keyValue);
      expect(
        await inPage<string>(page, 'history.state === null ? "" : JSON.stringify(history.state)'),
      ).not.toContain(keyValue);
    });

    /** Picks an item of the key's row's Actions menu. */
    const rowAction = async (item: string) => {
      await keyRow().getByRole('button', { name: 'Actions', exact: true }).click();
      await page.getByRole('menuitem', { name: item, exact: true }).click();
    };

    it('disables the key after confirming in a dialog, enables it, and the API agrees after each', async () => {
      await rowAction('Disable');
      const confirm = page.getByRole('dialog');
      await confirm.getByRole('button', { name: 'Disable', exact: true }).click();
      await confirm.waitFor({ state: 'detached' });
      await keyRow().getByText('disabled', { exact: true }).waitFor();
      expect((await getKey(keyId).expect(200)).body).toEqual(
        expect.objectContaining({ status: 'disabled', enabled: false }),
      );
      expect((await verify(keyValue)).status).toBe(401);

      await rowAction('Enable');
      await keyRow().getByText('active', { exact: true }).waitFor();
      expect((await getKey(keyId).expect(200)).body).toEqual(
        expect.objectContaining({ status: 'active', enabled: true }),
      );
      expect((await verify(keyValue)).status).toBe(200);
    });

    it('rotates the key with a grace period of 1 minute: a new value, the old one still working', async () => {
      const before = (await getKey(keyId).expect(200)).body;
      await rowAction('Rotate');
      const dialog = page.getByRole('dialog');
      // Typed with a unit, rather than one of the presets.
      await dialog.getByRole('radio', { name: 'Other', exact: true }).check();
      await dialog.getByLabel('Grace period amount', { exact: true }).fill('1');
      await dialog.getByLabel('Grace period unit', { exact: true }).selectOption('minutes');
      await dialog.getByRole('button', { name: 'Rotate', exact: true }).click();
      const field = dialog.getByLabel('New key value', { exact: true });
      await field.waitFor();
      expect(await field.getAttribute('readonly')).not.toBeNull();
      rotatedValue = await field.inputValue();
      expect(rotatedValue).not.toBe(keyValue);

      const after = (await getKey(keyId).expect(200)).body;
      expect(after.start).not.toBe(before.start);
      expect(rotatedValue.startsWith(after.start)).toBe(true);
      expect(after.previous_key_expires_at).toEqual(expect.any(String));
      expect(Date.parse(after.previous_key_expires_at) - Date.parse(after.last_rotated_at)).toBe(60_000);
      expect((await verify(rotatedValue)).status).toBe(200);
      expect((await verify(keyValue)).status).toBe(200);

      await dialog.getByRole('button', { name: 'Done', exact: true }).click();
      await dialog.waitFor({ state: 'detached' });
      expect(await everythingShown(page)).not.toContain(rotatedValue);
    });

    it("opens the key's detail page: its audit log and a usage chart of the last 24 hours", async () => {
      // The verifications above, written to the database now rather than at the next flush (every second),
      // so the chart and the API count the same requests.
      await t.app.get(UsageCounter).flush();
      const buckets = (await t.http.get(`/v1/api-keys/${keyId}/usage`).set(admin.auth).expect(200)).body.data;
      const requests = buckets.reduce(
        (sum: number, bucket: { requests: number }) => sum + bucket.requests,
        0,
      );
      expect(requests).toBeGreaterThan(0);
      await keyRow().getByRole('link', { name: keyName, exact: true }).click();
      await pageShown(page, new RegExp(keyName));
      expect(new URL(page.url()).pathname).toBe(`/dashboard/api-keys/${keyId}`);

      const auditLog = page.getByRole('table', { name: /audit/i });
      for (const action of ['key.created', 'key.disabled', 'key.enabled', 'key.rotated']) {
        await auditLog.getByText(action, { exact: true }).first().waitFor();
      }
      const chart = page.getByRole('img', { name: /24 hours/i });
      await chart.waitFor();
      expect(await chart.getAttribute('aria-labelledby')).not.toBeNull();
      await page.getByRole('img', { name: new RegExp(`\\b${requests} requests\\b`) }).waitFor();
      expect(await chart.evaluate((element) => element.tagName.toLowerCase())).toBe('svg');
      const shown = await everythingShown(page);
      expect(shown).not.toContain(keyValue);
      expect(shown).not.toContain(rotatedValue);
      await expectAccessible(page, 'key detail');
      // The chart and the audit log in view, rather than the facts above them.
      await page
        .getByRole('heading', { level: 2, name: /usage/i })
        .evaluate((heading) => (heading as any).scrollIntoView({ block: 'start' }));
      await screenshot(page, 'api-key-detail');
    });

    it('deletes the key after confirming in a dialog, and the API no longer knows it', async () => {
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await pageShown(page, 'API Keys');
      await page.getByRole('link', { name: 'billing-service', exact: true }).waitFor();
      expect(await keyRow().count()).toBe(0);

      expect((await getKey(keyId)).status).toBe(404);
      expect((await verify(rotatedValue)).status).toBe(401);
      expect((await verify(keyValue)).status).toBe(401);
    });

    it.each([
      ['Users', 'Users'],
      ['Teams', 'Teams'],
      ['Roles', 'Roles'],
      ['Webhooks', 'Webhooks'],
      ['Audit log', 'Audit log'],
    ])('shows the %s page, accessible', async (link, heading) => {
      await navLink(page, link).click();
      await pageShown(page, heading);
      await expectAccessible(page, heading);
    });

    it('shows the permission matrix of a custom role', async () => {
      await navLink(page, 'Roles').click();
      await pageShown(page, 'Roles');
      await page.getByRole('button', { name: 'Create role', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('checkbox', { name: 'api_keys:read', exact: true }).waitFor();
      await dialog.getByLabel('Role name', { exact: true }).fill('key_auditor');
      await dialog.getByRole('checkbox', { name: 'api_keys:read', exact: true }).check();
      await dialog.getByRole('checkbox', { name: 'audit:read', exact: true }).check();
      await expectAccessible(page, 'role matrix');
      await screenshot(page, 'roles');
      await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
      await dialog.waitFor({ state: 'detached' });
    });

    it.each([
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ])('lays out the API Keys page on a %s screen without horizontal scrolling', async (_name, size) => {
      await page.setViewportSize(size);
      // On a phone the navigation folds behind the Menu button (test/dashboard-shell.e2e-spec.ts tests it).
      await showNavigation(page);
      await navLink(page, 'API Keys').click();
      await pageShown(page, 'API Keys');
      await page.getByRole('link', { name: 'billing-service', exact: true }).waitFor();
      await expectNoHorizontalScroll(page);
      // The navigation is there and works at this size.
      await showNavigation(page);
      for (const name of ['Settings', 'Users and Teams', 'API Keys', 'Users', 'Roles', 'Audit log']) {
        await navLink(page, name).scrollIntoViewIfNeeded();
        expect(await navLink(page, name).isVisible()).toBe(true);
      }
      await navLink(page, 'Users').click();
      await pageShown(page, 'Users');
      await page.setViewportSize(DESKTOP);
    });

    it('signs out, which ends the session on the server too', async () => {
      await navLink(page, 'API Keys').click();
      await pageShown(page, 'API Keys');
      const [session] = await page.context().cookies(`${baseUrl}/v1/auth/session`);
      expect(session).toBeDefined();

      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
      await page.getByLabel('Email', { exact: true }).waitFor();
      expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);

      const refresh =
        "fetch('/v1/auth/session/refresh', { method: 'POST', headers: { 'X-Gatehouse-CSRF': '1' } }).then((r) => r.status)";
      // The cookie is gone: nobody is signed in on this browser (204, not an error).
      expect(await inPage(page, refresh)).toBe(204);
      // Even the old cookie, put back, no longer opens a session: the server ended it.
      await page.context().addCookies([session]);
      replayingRevokedCookie = true;
      try {
        expect(await inPage(page, refresh)).toBe(401);
      } finally {
        replayingRevokedCookie = false;
      }

      await page.reload();
      await page.getByLabel('Email', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
      expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(0);
    });
  });

  describe('a viewer', () => {
    it('is not offered Create key, and the API refuses it anyway', async () => {
      const page = await openPage('viewer');
      await page.goto(`${baseUrl}/dashboard/api-keys`);
      await page.getByLabel('Email', { exact: true }).waitFor();
      await signInThroughForm(page, viewer.email);
      await pageShown(page, 'API Keys');
      await page.getByText(viewer.email, { exact: true }).waitFor();
      // A viewer may not even read keys (contract, built-in roles): the page says so instead of failing.
      await page.getByText(/do not have access to API keys/i).waitFor();
      expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
      for (const control of ['Rotate', 'Disable', 'Delete']) {
        expect(await page.getByRole('button', { name: control, exact: true }).count()).toBe(0);
      }

      const refused = await t.http
        .post('/v1/api-keys')
        .set(viewer.auth)
        .send({ name: 'not allowed', role: 'viewer' });
      expect(refused.status).toBe(403);
    });

    it('a reader of keys sees the list but no control that changes a key', async () => {
      // A custom role that may read keys and nothing else: the list is there, the controls are not.
      await t.http
        .post('/v1/roles')
        .set(admin.auth)
        .send({ role_name: 'key_reader', permissions: { api_keys: ['read'] } })
        .expect(201);
      const reader = await createUser(t.http, { auth: admin.auth }, 'key_reader');
      const page = await openPage('key reader');
      await page.goto(`${baseUrl}/dashboard/api-keys`);
      await page.getByLabel('Email', { exact: true }).waitFor();
      await signInThroughForm(page, reader.email);
      await pageShown(page, 'API Keys');
      await page.getByRole('link', { name: 'nightly-import' }).waitFor();
      expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
      for (const control of ['Actions', 'Edit', 'Rotate', 'Disable', 'Enable', 'Delete']) {
        expect(await page.getByRole('button', { name: control, exact: true }).count()).toBe(0);
      }
    });
  });

  // In a describe of its own, declared last, so it runs after every page above has been used.
  describe('all along', () => {
    it('logged no console error and threw no uncaught exception in any page', () => {
      expect(dashboard.errors).toEqual([]);
    });
  });
});
