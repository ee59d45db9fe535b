import type { Locator, Page, Request } from 'playwright-core';
import { UsageCounter } from '../src/usage/usage-counter';
import { CreatedUser, createUser, SignedUpOrganization, signUpOrganization } from './support/factories';
import { createKey, CreatedKey } from './support/keys';
import {
  BrowserDashboard,
  describeInBrowser,
  DESKTOP,
  expectAccessible,
  expectNoHorizontalScroll,
  inPage,
  navLink,
  pageShown,
  PHONE,
  screenshot,
  signedInPage,
  startBrowserDashboard,
} from './support/dashboard-browser';
import type { TestApp } from './support/test-app';

/**
 * The dashboard's Identities and Usage pages and its charts' range pickers (contract, "Dashboard",
 * added later), in Chromium: an identity created and edited through its forms with the API checked
 * after each step, its keys and usage shown as the API reports them, the Usage page's numbers equal to
 * the API's for the range it asked, a narrow screen, axe-core on every page and no console error.
 */

type Json = Record<string, any>;

/**
 * Set only while the delete test asks to delete an identity that keys still name: the browser logs the
 * API's 409 as a console error, and that refusal is what the step shows.
 */
let deletingInUse = false;
const refusedOnPurpose = (text: string, url: string) =>
  deletingInUse && /status of 409/.test(text) && /\/v1\/identities\/idt_\w+$/.test(url);

describeInBrowser('test/dashboard-usage.e2e-spec.ts')('identities and usage pages in a browser', () => {
  let dashboard: BrowserDashboard;
  let t: TestApp;
  let org: SignedUpOrganization;
  let admin: CreatedUser;
  let page: Page;
  const externalId = `cus_${Date.now().toString(36)}`;
  let identityId: string;
  let attached: CreatedKey;
  let other: CreatedKey;

  const getIdentity = async (): Promise<Json> =>
    (await t.http.get(`/v1/identities/${identityId}`).set(admin.auth).expect(200)).body;
  /** The query string of a request the page made, as an object. */
  const queryOf = (request: Request): Record<string, string> =>
    Object.fromEntries(new URL(request.url()).searchParams);
  const usageRequest = (path: string, extra: (query: Record<string, string>) => boolean = () => true) =>
    page.waitForRequest((request) => {
      const url = new URL(request.url());
      return url.pathname === path && extra(Object.fromEntries(url.searchParams));
    });
  /** The cells of a table's body, row by row (the row header first). */
  const bodyRows = (table: Locator): Promise<string[][]> =>
    table.evaluate((element) =>
      Array.from((element as any).tBodies[0].rows as any[], (row) =>
        Array.from(row.cells as any[], (cell) => (cell.textContent as string).trim()),
      ),
    );
  const form = (name: string) => page.getByRole('form', { name, exact: true });
  /** Opens each chart's "Show the numbers as a table" that is still closed, as a reader would. */
  const openChartTables = async (): Promise<void> => {
    const closed = page.locator('details:not([open]) > summary', { hasText: 'Show the numbers as a table' });
    while ((await closed.count()) > 0) await closed.first().click();
  };

  beforeAll(async () => {
    dashboard = await startBrowserDashboard();
    t = dashboard.t;
    org = await signUpOrganization(t.http, 'Dashboard usage');
    admin = await createUser(t.http, org, 'administrator');
    page = await signedInPage(dashboard, 'administrator', admin.email, '/identities', refusedOnPurpose);
  }, 300_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  it('creates an identity through its form, refusing invalid meta on the field; the API lists it as entered', async () => {
    await pageShown(page, 'Identities');
    await page.getByText('No identities yet.').waitFor();
    await expectAccessible(page, 'Identities (empty)');

    await page.getByRole('button', { name: 'Create identity', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('External ID', { exact: true }).fill(externalId);
    await dialog.getByLabel('Requests per minute', { exact: true }).fill('120');
    await dialog.getByLabel('Requests per hour', { exact: true }).fill('5000');
    await dialog.getByLabel('Credits', { exact: true }).fill('1000');
    await dialog.getByLabel('Refill', { exact: true }).selectOption('daily');
    await dialog.getByLabel('Refill amount', { exact: true }).fill('1000');
    const meta = dialog.getByLabel('Meta (JSON)', { exact: true });
    await meta.fill('{"plan": "pro", "seats": 5');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await dialog
      .getByText(/Meta is not valid JSON/)
      .first()
      .waitFor();
    expect(await meta.getAttribute('aria-invalid')).toBe('true');
    // Nothing was sent.
    const none = await t.http.get('/v1/identities').query({ external_id: externalId }).set(admin.auth);
    expect(none.body.data).toEqual([]);
    await expectAccessible(page, 'create identity form with an error');
    await screenshot(page, 'create-identity-form');

    await meta.fill('{"plan": "pro", "seats": 5}');
    expect(await meta.getAttribute('aria-invalid')).toBeNull();
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await pageShown(page, `Identity “${externalId}”`);

    const listed = await t.http
      .get('/v1/identities')
      .query({ external_id: externalId })
      .set(admin.auth)
      .expect(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({
        external_id: externalId,
        meta: { plan: 'pro', seats: 5 },
        rate_limit: { requests_per_minute: 120, requests_per_hour: 5000 },
        credits: { remaining: 1000, refill: { interval: 'daily', amount: 1000 }, refilled_at: null },
        key_count: 0,
      }),
    ]);
    identityId = listed.body.data[0].id;
    expect(new URL(page.url()).pathname).toBe(`/dashboard/identities/${identityId}`);

    // The list shows it with its limits, credits, meta and number of keys.
    await navLink(page, 'Identities').click();
    await pageShown(page, 'Identities');
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: externalId }) });
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'plan: pro, seats: 5',
      '120 per minute, 5,000 per hour',
      '1,000 remaining, refilled daily to 1,000',
      '0',
      expect.any(String),
    ]);
    await expectAccessible(page, 'Identities');
    await screenshot(page, 'identities');
  });

  it('edits its rate limit, credits and meta; the API agrees after each', async () => {
    await page.getByRole('link', { name: externalId, exact: true }).click();
    await pageShown(page, `Identity “${externalId}”`);
    const status = page.getByRole('status').filter({ hasText: 'saved' });

    const limits = form('Rate limit');
    await limits.getByLabel('Requests per minute', { exact: true }).fill('30');
    await limits.getByLabel('Requests per hour', { exact: true }).fill('');
    await limits.getByRole('button', { name: 'Save rate limit' }).click();
    await status.filter({ hasText: 'Rate limit saved.' }).waitFor();
    expect((await getIdentity()).rate_limit).toEqual({ requests_per_minute: 30, requests_per_hour: null });

    const credits = form('Credits');
    await credits.getByLabel('Credits', { exact: true }).fill('200');
    await credits.getByLabel('Refill', { exact: true }).selectOption('none');
    await credits.getByRole('button', { name: 'Save credits' }).click();
    await status.filter({ hasText: 'Credits saved.' }).waitFor();
    expect((await getIdentity()).credits).toEqual(expect.objectContaining({ remaining: 200, refill: null }));

    await page.getByText('200 remaining', { exact: true }).waitFor();

    const metaForm = form('Meta');
    const meta = metaForm.getByLabel('Meta (JSON)', { exact: true });
    expect(JSON.parse(await meta.inputValue())).toEqual({ plan: 'pro', seats: 5 });
    await meta.fill("{plan: 'enterprise'}");
    await metaForm.getByRole('button', { name: 'Save meta' }).click();
    await metaForm
      .getByText(/Meta is not valid JSON/)
      .first()
      .waitFor();
    expect((await getIdentity()).meta).toEqual({ plan: 'pro', seats: 5 });
    await meta.fill('{"plan": "enterprise"}');
    await metaForm.getByRole('button', { name: 'Save meta' }).click();
    await status.filter({ hasText: 'Meta saved.' }).waitFor();
    expect((await getIdentity()).meta).toEqual({ plan: 'enterprise' });
    await expectAccessible(page, 'identity page');
  });

  it('lists the keys attached to it and charts their requests, over the range picked', async () => {
    // Attached through the API: the key form's identity field is another part of the dashboard.
    attached = await createKey(t.http, admin.auth, { name: 'acme-backend' });
    await t.http
      .patch(`/v1/api-keys/${attached.id}`)
      .set(admin.auth)
      .send({ identity_id: identityId })
      .expect(200);
    other = await createKey(t.http, admin.auth, { name: 'unrelated-service' });
    for (let i = 0; i < 3; i++) await t.http.get('/v1/auth/verify').set(attached.auth).expect(200);
    await t.http.get('/v1/auth/verify').set(other.auth).expect(200);
    // Written to the database now rather than at the next flush (every second).
    await t.app.get(UsageCounter).flush();
    const usage = (await t.http.get(`/v1/identities/${identityId}/usage`).set(admin.auth).expect(200)).body;
    const requests = usage.data.reduce((sum: number, bucket: Json) => sum + bucket.requests, 0);
    expect(requests).toBe(3);

    await page.reload();
    await pageShown(page, `Identity “${externalId}”`);
    const keys = page.getByRole('table', { name: 'Keys of this identity' });
    const link = keys.getByRole('link', { name: 'acme-backend', exact: true });
    expect(await link.getAttribute('href')).toBe(`/dashboard/api-keys/${attached.id}`);
    expect(await keys.getByRole('link').count()).toBe(1);
    // The identity's credits paid for those requests.
    expect((await getIdentity()).credits.remaining).toBe(197);
    await page.getByText('197 remaining', { exact: true }).waitFor();

    await page.getByRole('img', { name: /Requests per hour in the last 24 hours/ }).waitFor();
    await page.getByRole('img', { name: /\b3 requests: 3 allowed, 0 denied\b/ }).waitFor();

    // Another range: another request, answered and shown as the API answers it.
    const asked = usageRequest(`/v1/identities/${identityId}/usage`, (query) => query.granularity === 'day');
    await page.getByRole('radio', { name: '7 days', exact: true }).check();
    const query = queryOf(await asked);
    await page.getByRole('img', { name: /Requests per day in the last 7 days 3 requests/ }).waitFor();
    const week = (
      await t.http.get(`/v1/identities/${identityId}/usage`).query(query).set(admin.auth).expect(200)
    ).body;
    expect(week.data).toHaveLength(7);
    await openChartTables();
    const table = page.getByRole('table', { name: /Requests per day in the last 7 days/ });
    expect((await bodyRows(table)).map((row) => row.slice(1).map(Number))).toEqual(
      week.data.map((bucket: Json) => [bucket.requests, bucket.allowed, bucket.denied]),
    );
    await expectAccessible(page, 'identity page with usage');
    await screenshot(page, 'identity');

    // The key's page has the same picker; 24 hours is its default.
    await link.click();
    await pageShown(page, /acme-backend/);
    await page.getByRole('img', { name: /24 hours.*\b3 requests\b/ }).waitFor();
    expect(await page.getByRole('radio', { name: '24 hours', exact: true }).isChecked()).toBe(true);
    const month = usageRequest(`/v1/api-keys/${attached.id}/usage`, (q) => q.granularity === 'day');
    await page.getByRole('radio', { name: '30 days', exact: true }).check();
    expect(queryOf(await month)).toEqual(expect.objectContaining({ granularity: 'day' }));
    await page.getByRole('img', { name: /Requests per day in the last 30 days 3 requests/ }).waitFor();
  });

  /**
   * The page's numbers against the API's answers to the very query the page sent: the totals, every
   * bucket of the chart's table, and the top keys and identities.
   */
  async function expectUsagePageAsApi(seriesRequest: Request, rangeLabel: string): Promise<Json> {
    const query = queryOf(seriesRequest);
    const span = { from: query.from, to: query.to };
    const [series, keys, identities] = await Promise.all([
      t.http.get('/v1/usage/series').query(query).set(admin.auth).expect(200),
      t.http.get('/v1/usage').query(span).set(admin.auth).expect(200),
      t.http
        .get('/v1/usage')
        .query({ ...span, group_by: 'identity' })
        .set(admin.auth)
        .expect(200),
    ]);
    await page.getByRole('heading', { level: 2, name: `In the last ${rangeLabel}` }).waitFor();
    await pageShown(page, 'Usage');

    const total = (field: string) =>
      series.body.data.reduce((sum: number, bucket: Json) => sum + bucket[field], 0);
    const stats = await page
      .locator('dl.stats > div')
      .evaluateAll((items) =>
        items.map((item) => [
          (item as any).querySelector('dt').textContent,
          (item as any).querySelector('dd').textContent,
        ]),
      );
    expect(stats).toEqual([
      ['Requests', String(total('requests'))],
      ['Allowed', String(total('allowed'))],
      ['Denied', String(total('denied'))],
      ['Credits spent', String(total('credits_spent'))],
    ]);
    await openChartTables();
    const perBucket = await bodyRows(page.getByRole('table', { name: /^Requests per .* in the last/ }));
    expect(perBucket.map((row) => row.slice(1).map(Number))).toEqual(
      series.body.data.map((bucket: Json) => [bucket.requests, bucket.allowed, bucket.denied]),
    );
    const credits = await bodyRows(page.getByRole('table', { name: /^Credits spent per .* in the last/ }));
    expect(credits.map((row) => Number(row[1]))).toEqual(
      series.body.data.map((bucket: Json) => bucket.credits_spent),
    );
    const totals = (row: Json) => [row.requests, row.allowed, row.denied, row.credits_spent];
    expect(await bodyRows(page.getByRole('table', { name: /^Keys with the most requests/ }))).toEqual(
      keys.body.data.map((row: Json) => [row.name, ...totals(row).map(String)]),
    );
    expect(await bodyRows(page.getByRole('table', { name: /^Identities with the most requests/ }))).toEqual(
      identities.body.data.map((row: Json) => [row.external_id, ...totals(row).map(String)]),
    );
    return series.body;
  }

  it("shows the organization's usage as the API reports it for the range asked, and asks again when the range changes", async () => {
    const asked = usageRequest('/v1/usage/series');
    await navLink(page, 'Usage').click();
    const month = await expectUsagePageAsApi(await asked, '30 days');
    expect(month).toMatchObject({ granularity: 'day' });
    expect(month.data).toHaveLength(30);
    // What the test sent: the attached key's 3 requests and the other key's one, and 3 credits.
    expect(month.data[29]).toMatchObject({ requests: 4, allowed: 4, credits_spent: 3 });
    await page.getByRole('link', { name: externalId, exact: true }).waitFor();
    expect(
      await page.getByRole('img', { name: /Requests per day in the last 30 days 4 requests/ }).count(),
    ).toBe(1);
    await expectAccessible(page, 'Usage');
    await inPage(page, 'window.scrollTo(0, 0)');
    await screenshot(page, 'usage');

    const hourly = usageRequest('/v1/usage/series', (query) => query.granularity === 'hour');
    await page.getByRole('radio', { name: '24 hours', exact: true }).check();
    const day = await expectUsagePageAsApi(await hourly, '24 hours');
    expect(day.data).toHaveLength(24);
    await page.getByRole('img', { name: /Requests per hour in the last 24 hours 4 requests/ }).waitFor();
  });

  it.each([
    ['Usage', '/usage'],
    ['identity', ''],
  ])(
    'fits the %s page on a phone: no sideways scrolling, the charts inside their boxes',
    async (_name, path) => {
      await page.setViewportSize(PHONE);
      try {
        await page.goto(`${dashboard.baseUrl}/dashboard${path || `/identities/${identityId}`}`);
        await pageShown(page, path ? 'Usage' : `Identity “${externalId}”`);
        await expectNoHorizontalScroll(page);
        const charts = page.locator('figure.chart');
        expect(await charts.count()).toBeGreaterThan(0);
        for (const chart of await charts.all()) {
          const figure = (await chart.boundingBox())!;
          const svg = (await chart.locator('svg').boundingBox())!;
          expect(svg.x).toBeGreaterThanOrEqual(figure.x);
          expect(svg.x + svg.width).toBeLessThanOrEqual(figure.x + figure.width + 0.5);
          // The time labels along the bottom keep their size and do not run into each other.
          const labels = await chart
            .locator('svg > g > text.axis[text-anchor="middle"]')
            .evaluateAll((texts) =>
              texts.map((text) => {
                const box = (text as any).getBoundingClientRect();
                return { left: box.left, right: box.right, height: box.height };
              }),
            );
          expect(labels.length).toBeGreaterThan(1);
          for (const label of labels) expect(label.height).toBeGreaterThanOrEqual(11);
          for (let i = 1; i < labels.length; i++) expect(labels[i].left).toBeGreaterThan(labels[i - 1].right);
        }
        await charts.first().evaluate((chart) => (chart as any).scrollIntoView({ block: 'center' }));
        await screenshot(page, path ? 'usage-phone' : 'identity-phone');
      } finally {
        await page.setViewportSize(DESKTOP);
      }
    },
  );

  it('offers a reader of identities no control that changes one, and a reader of keys no Identities page', async () => {
    for (const [role, permissions] of [
      ['identity_reader', { identities: ['read'], api_keys: ['read'] }],
      ['usage_reader', { api_keys: ['read'] }],
    ] as const) {
      await t.http.post('/v1/roles').set(admin.auth).send({ role_name: role, permissions }).expect(201);
    }
    const identityReader = await createUser(t.http, org, 'identity_reader');
    const readerPage = await signedInPage(dashboard, 'identity reader', identityReader.email, '/identities');
    await pageShown(readerPage, 'Identities');
    await readerPage.getByRole('link', { name: externalId, exact: true }).click();
    await pageShown(readerPage, `Identity “${externalId}”`);
    await readerPage.getByRole('link', { name: 'acme-backend', exact: true }).waitFor();
    for (const control of [
      'Create identity',
      'Save rate limit',
      'Save credits',
      'Save meta',
      'Delete identity',
    ]) {
      expect([control, await readerPage.getByRole('button', { name: control }).count()]).toEqual([
        control,
        0,
      ]);
    }

    const usageReader = await createUser(t.http, org, 'usage_reader');
    const usagePage = await signedInPage(dashboard, 'usage reader', usageReader.email, '/usage');
    await pageShown(usagePage, 'Usage');
    await usagePage.getByRole('table', { name: /^Keys with the most requests/ }).waitFor();
    expect(await usagePage.getByRole('heading', { name: 'Top identities' }).count()).toBe(0);
    expect(await navLink(usagePage, 'Identities').count()).toBe(0);
    expect(await navLink(usagePage, 'Usage').count()).toBe(1);
    await usagePage.goto(`${dashboard.baseUrl}/dashboard/identities`);
    await usagePage.getByText(/do not have access to identities/i).waitFor();
  });

  it('deletes an identity after confirming, and shows the refusal for one that keys still name', async () => {
    await page.goto(`${dashboard.baseUrl}/dashboard/identities/${identityId}`);
    await pageShown(page, `Identity “${externalId}”`);
    await page.getByRole('button', { name: 'Delete identity', exact: true }).click();
    const dialog = page.getByRole('dialog');
    deletingInUse = true;
    try {
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      // The API's reason (409 identity_in_use), in the dialog; the identity is still there.
      const refusal = await t.http.delete(`/v1/identities/${identityId}`).set(admin.auth).expect(409);
      expect(refusal.body.code).toBe('identity_in_use');
      await dialog.getByRole('alert').getByText(refusal.body.detail, { exact: true }).waitFor();
    } finally {
      deletingInUse = false;
    }
    await getIdentity();
    await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();

    const spare = (
      await t.http
        .post('/v1/identities')
        .set(admin.auth)
        .send({ external_id: `${externalId}_spare` })
        .expect(201)
    ).body;
    await page.goto(`${dashboard.baseUrl}/dashboard/identities/${spare.id}`);
    await pageShown(page, `Identity “${spare.external_id}”`);
    await page.getByRole('button', { name: 'Delete identity', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await pageShown(page, 'Identities');
    await page.getByRole('link', { name: externalId, exact: true }).waitFor();
    expect(await page.getByRole('link', { name: spare.external_id, exact: true }).count()).toBe(0);
    await t.http.get(`/v1/identities/${spare.id}`).set(admin.auth).expect(404);
  });

  // Declared last, so it runs after every page above has been used.
  it('logged no console error and threw no uncaught exception in any page', () => {
    expect(dashboard.errors).toEqual([]);
  });
});
