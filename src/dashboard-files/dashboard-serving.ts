import { Logger } from '@nestjs/common';
import type { ServeStaticModuleOptions } from '@nestjs/serve-static';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cacheHashedAssets } from './dashboard-headers';

export const DASHBOARD_ROOT = '/dashboard';
const ASSETS = 'assets';

/** Whether `npm run build` left a dashboard in `directory` (the start banner names its URL then). */
export function hasDashboardBuild(directory: string): boolean {
  return existsSync(join(directory, 'index.html'));
}

/**
 * How @nestjs/serve-static serves the built dashboard: its files as they are, and index.html for every
 * other path under /dashboard, so client-side routes survive a reload. A missing hashed asset is a
 * 404, not index.html (HTML where a script belongs). Two entries because one render path
 * cannot match both `/dashboard` and everything below it.
 *
 * Without a build (no index.html, as in tests and API-only installs) nothing is served and /dashboard
 * falls through to the app's 404 problem+json. Decided once, at start.
 */
export function dashboardServing(directory: string): ServeStaticModuleOptions[] {
  if (!hasDashboardBuild(directory)) {
    new Logger('Dashboard').log(`No dashboard build in ${directory}: /dashboard answers 404.`);
    return [];
  }
  const common: ServeStaticModuleOptions = {
    rootPath: directory,
    serveRoot: DASHBOARD_ROOT,
    // Only the assets: the loader's error middleware turns any error of an excluded path into a 404,
    // so listing the API's paths here would answer a malformed JSON body on /v1 with 404, not 400. The
    // render paths are under /dashboard anyway.
    exclude: [`${DASHBOARD_ROOT}/${ASSETS}/{*path}`],
    serveStaticOptions: {
      // index.html is always the render path's answer, with the same headers; `/dashboard` is not
      // redirected to `/dashboard/`.
      index: false,
      redirect: false,
      // Everything else keeps the `no-store` of dashboardHeaders.
      setHeaders: cacheHashedAssets(join(directory, ASSETS)),
    },
  };
  return [
    { ...common, renderPath: '{*path}' },
    { ...common, renderPath: '' },
  ];
}
