import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { PASSWORD } from './factories';
import { startTestApp, TestApp, TestAppOptions } from './test-app';

/**
 * What every browser suite of the dashboard shares: the Vite build served by the app at /dashboard,
 * Chromium driven with playwright-core (Debian's /usr/bin/chromium; nothing here downloads a browser),
 * console errors collected, axe-core, screenshots, and the few ways a page is found and waited for.
 *
 * Without Chromium a suite is skipped with a warning, except under CI, where it fails.
 * `UPDATE_SCREENSHOTS=1` also writes docs/screenshots/.
 */

const ROOT = join(__dirname, '..', '..');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : undefined;
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };
export const UI_TIMEOUT_MS = 15_000;

/** `describe` when Chromium is there; `describe.skip` with a warning when not (a failure under CI). */
export function describeInBrowser(suite: string): jest.Describe {
  if (existsSync(CHROMIUM)) return describe;
  if (process.env.CI) {
    throw new Error(
      `${suite}: the dashboard's browser tests need Chromium at ${CHROMIUM}, and CI must run them: ` +
        'install it with `apt-get install -y chromium` (.ci/run does this).',
    );
  }
  console.warn(`${suite} skipped: no Chromium at ${CHROMIUM} (apt-get install chromium to run it).`);
  return describe.skip;
}

/** The newest modification time of a file under `path`. */
function newestMtime(path: string): number {
  const stats = statSync(path);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((entry) => newestMtime(join(path, entry))));
}

/**
 * A dashboard build as current as its sources: dist/dashboard when `npm run build` made it after the
 * last change, else a fresh Vite build into a temporary directory (never over dist/dashboard, which
 * someone else's build may be writing). Returns the directory and whether the caller must remove it.
 */
export function dashboardBuild(): { directory: string; temporary: boolean } {
  const built = join(ROOT, 'dist', 'dashboard');
  const index = join(built, 'index.html');
  const sources = Math.max(
    newestMtime(join(ROOT, 'dashboard', 'src')),
    newestMtime(join(ROOT, 'dashboard', 'index.html')),
    newestMtime(join(ROOT, 'dashboard', 'vite.config.ts')),
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return { directory: built, temporary: false };

  const directory = mkdtempSync(join(tmpdir(), 'gatehouse-dashboard-build-'));
  const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const result = spawnSync(
    process.execPath,
    [vite, 'build', '--config', 'dashboard/vite.config.ts', '--outDir', directory, '--emptyOutDir'],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' },
    },
  );
  if (result.status !== 0 || !existsSync(join(directory, 'index.html'))) {
    rmSync(directory, { recursive: true, force: true });
    throw new Error(
      `vite build of the dashboard failed (${result.error?.message ?? `exit ${result.status}`}):\n` +
        `${result.stdout}\n${result.stderr}`,
    );
  }
  return { directory, temporary: true };
}

/**
 * Collects a page's console errors and uncaught exceptions into `errors`. `expected` lets a test
 * name the one console error it provokes on purpose (for example a revoked session's 401).
 */
export function watchForErrors(
  page: Page,
  errors: string[],
  who: string,
  expected: (text: string, url: string) => boolean = () => false,
): void {
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const url = message.location().url;
    if (expected(message.text(), url)) return;
    errors.push(`${who}: console error "${message.text()}" at ${url}`);
  });
  page.on('pageerror', (error) => errors.push(`${who}: uncaught ${error.name}: ${error.message}`));
}

/** A browser-side expression's value (this project's tsconfig has no DOM types, so expressions are text). */
export const inPage = <T>(page: Page, expression: string): Promise<T> =>
  page.evaluate(expression) as Promise<T>;

/** Waits for the page's <h1> and for every list and chart on it to have loaded. */
export async function pageShown(page: Page, heading: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  // A function, not a string: a string predicate is eval'ed in the page, which its CSP refuses.
  await page.waitForFunction(() => !(globalThis as any).document.querySelector('[aria-busy="true"]'));
}

/**
 * All a page holds in its document: the markup, the text, and the current value of every form control
 * (a property, which the markup does not show).
 */
export const everythingShown = (page: Page): Promise<string> =>
  inPage<string>(
    page,
    `[document.documentElement.outerHTML, document.body.innerText,
      ...Array.from(document.querySelectorAll('input, textarea, select'), (control) => control.value)].join('\\n')`,
  );

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core over the whole document (open dialogs included): no `serious` or `critical` violation. */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  // page.evaluate runs outside the page's Content-Security-Policy, which would refuse an injected script.
  if (!(await inPage<boolean>(page, 'typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = await inPage<AxeViolation[]>(page, 'window.axe.run().then((r) => r.violations)');
  const grave = violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${what}: ${violation.id} (${violation.impact}) ${violation.help}: ` +
        violation.nodes.map((node) => JSON.stringify(node.target)).join(', '),
    );
  expect(grave).toEqual([]);
}

/** Writes docs/screenshots/<name>.png when UPDATE_SCREENSHOTS=1; `mask` hides secrets. */
export async function screenshot(page: Page, name: string, mask: Locator[] = []): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), mask, animations: 'disabled' });
}

/** The main navigation's link, as the contract names it. */
export const navLink = (page: Page, name: string): Locator =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

/**
 * Opens the navigation when a narrow screen has folded it behind the top bar's Menu button (aria-expanded),
 * so its links can be used; on a wide screen it is always shown and this does nothing.
 */
export async function showNavigation(page: Page): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu', exact: true });
  if ((await menu.isVisible()) && (await menu.getAttribute('aria-expanded')) !== 'true') await menu.click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export async function signInThroughForm(page: Page, email: string): Promise<void> {
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/**
 * Opens `path` under /dashboard in a fresh profile and signs in there as `email`; `expected` names the
 * console error the page's test provokes on purpose (see watchForErrors).
 */
export async function signedInPage(
  dashboard: BrowserDashboard,
  who: string,
  email: string,
  path = '/api-keys',
  expected?: (text: string, url: string) => boolean,
): Promise<Page> {
  const page = await dashboard.openPage(who, { expected });
  await page.goto(`${dashboard.baseUrl}/dashboard${path}`);
  await page.getByLabel('Email', { exact: true }).waitFor();
  await signInThroughForm(page, email);
  await page.getByText(email, { exact: true }).waitFor();
  return page;
}

/** The page's document is no wider than its window: nothing needs a horizontal scroll of the page. */
export async function expectNoHorizontalScroll(page: Page): Promise<void> {
  const { scrollWidth, innerWidth } = await inPage<{ scrollWidth: number; innerWidth: number }>(
    page,
    '({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })',
  );
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

/**
 * Nothing sticks out sideways: the page is no wider than its window, and no table's region is wider than
 * itself either (on a phone its columns fold instead of scrolling).
 */
export async function expectNothingOverflows(page: Page): Promise<void> {
  await expectNoHorizontalScroll(page);
  const wide = await inPage<string[]>(
    page,
    `Array.from(document.querySelectorAll('.table-wrap'))
      .filter((region) => region.scrollWidth > region.clientWidth)
      .map((region) => region.getAttribute('aria-label') + ': ' + region.scrollWidth + ' px in ' + region.clientWidth)`,
  );
  expect(wide).toEqual([]);
}

/**
 * A table row on a narrow screen, as the dashboard folds it: its row header (what identifies the row)
 * and the columns in `visible` shown in place, under their column headers; each column in `folded`
 * shown as a line under them, labelled with its header (the ::before of the cell), inside the window,
 * while its column header is hidden. Returns the folded lines' text by label.
 */
export async function expectFolded(
  row: Locator,
  { visible = [], folded }: { visible?: string[]; folded: string[] },
): Promise<Record<string, string>> {
  const table = row.locator('xpath=ancestor::table[1]');
  const header = row.getByRole('rowheader');
  expect(await header.isVisible()).toBe(true);
  const headerBox = (await header.boundingBox())!;
  const window = await inPage<number>(row.page(), 'window.innerWidth');
  expect(headerBox.x + headerBox.width).toBeLessThanOrEqual(window);
  for (const name of visible) {
    expect(await table.getByRole('columnheader', { name, exact: true }).isVisible()).toBe(true);
  }
  // The cells left in place hold their content: none spills over its neighbour.
  const spilling = await row.evaluate((element) =>
    Array.from((element as any).cells as any[])
      .filter((cell) => !cell.classList.contains('fold') && cell.scrollWidth > cell.clientWidth)
      .map((cell) => `${cell.dataset.label}: ${cell.scrollWidth} px in ${cell.clientWidth}`),
  );
  expect(spilling).toEqual([]);
  const lines: Record<string, string> = {};
  for (const label of folded) {
    const cell = row.locator(`td.fold[data-label="${label}"]`);
    expect({ label, visible: await cell.isVisible() }).toEqual({ label, visible: true });
    const box = (await cell.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(window);
    // Under the row's visible cells, not beside them.
    expect(box.y).toBeGreaterThanOrEqual(headerBox.y + headerBox.height - 1);
    const shownLabel = await cell.evaluate(
      (element) => (globalThis as any).getComputedStyle(element, '::before').content as string,
    );
    expect(shownLabel).toBe(JSON.stringify(label));
    expect(
      await table.locator('thead').getByRole('columnheader', { name: label, exact: true }).isVisible(),
    ).toBe(false);
    lines[label] = (await cell.innerText()).trim();
  }
  return lines;
}

/** A running app serving the dashboard build, and a Chromium to drive it. */
export interface BrowserDashboard {
  t: TestApp;
  baseUrl: string;
  browser: Browser;
  /** Console errors and uncaught exceptions of every page opened with `openPage`. */
  errors: string[];
  /** A fresh browser profile at the dashboard's origin, clipboard allowed, errors watched. */
  openPage(
    who: string,
    options?: {
      viewport?: { width: number; height: number };
      expected?: (text: string, url: string) => boolean;
    },
  ): Promise<Page>;
  close(): Promise<void>;
}

/** Builds (if needed) and serves the dashboard on a listening test app, and launches Chromium. */
export async function startBrowserDashboard(options: TestAppOptions = {}): Promise<BrowserDashboard> {
  const build = dashboardBuild();
  const t = await startTestApp({ ...options, env: { ...options.env, DASHBOARD_DIR: build.directory } });
  await t.app.listen(0, '127.0.0.1');
  const baseUrl = await t.app.getUrl();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true });
  const contexts: BrowserContext[] = [];
  const errors: string[] = [];
  return {
    t,
    baseUrl,
    browser,
    errors,
    async openPage(who, { viewport = DESKTOP, expected } = {}) {
      const context = await browser.newContext({ viewport, locale: 'en-GB', timezoneId: 'UTC' });
      contexts.push(context);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
      context.setDefaultTimeout(UI_TIMEOUT_MS);
      const page = await context.newPage();
      watchForErrors(page, errors, who, expected);
      return page;
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => undefined);
      await browser.close();
      await t.close();
      if (build.temporary) rmSync(build.directory, { recursive: true, force: true });
    },
  };
}
