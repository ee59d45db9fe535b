import { type INestApplication, Logger } from '@nestjs/common';
import { BootstrapAdmin } from './accounts/bootstrap-admin';
import { packageVersion } from './common/package-version';
import { OrganizationsService } from './accounts/organizations.service';
import type { AppConfig } from './config/app-config';
import { ConfigOf } from './config/config-namespace';
import { dashboardConfig, redisClusterNodes } from './config/namespaces';
import { DASHBOARD_ROOT, hasDashboardBuild } from './dashboard-files/dashboard-serving';
import { displayUrl } from './main.preflight';

/** What a person starting the service needs to know, gathered after it listens. */
export interface StartFacts {
  version: string;
  /** Where a browser or curl on this machine reaches it. */
  url: string;
  /** `directUrl`: where sessions of their own go past a transaction pooler (DATABASE_POOLER). */
  database: { kind: 'postgres'; url: string; directUrl?: string } | { kind: 'embedded'; dataDir: string };
  redisUrl?: string;
  /** REDIS_CLUSTER_NODES's nodes. */
  redisClusterNodes?: string[];
  hasUser: boolean;
  signupAllowed: boolean;
  /** The bootstrap administrator, only when that account exists and the bootstrap password signs it in. */
  signInAs?: string;
  /** Set when a dashboard build is served. */
  dashboardUrl?: string;
}

/** The banner's lines, and a warning when nobody can sign in. */
export function startBanner(facts: StartFacts): { lines: string[]; warning?: string } {
  const lines = [
    `Gatehouse ${facts.version} listening on ${facts.url}`,
    // Second, where a person looks first: the dashboard is most people's way in. Without a build there is
    // no line: DashboardModule has already said that /dashboard answers 404.
    ...(facts.dashboardUrl ? [`dashboard: ${facts.dashboardUrl}`] : []),
    `API reference: ${facts.url}/docs (OpenAPI document: ${facts.url}/openapi.json)`,
    facts.database.kind === 'postgres'
      ? `database: PostgreSQL at ${displayUrl(facts.database.url)}` +
        (facts.database.directUrl
          ? ` through a transaction pooler (LISTEN and migrations at ${displayUrl(facts.database.directUrl)})`
          : '')
      : `database: embedded PGlite in ${facts.database.dataDir} (one process; set DATABASE_URL for PostgreSQL)`,
    facts.redisClusterNodes
      ? `redis: cluster of ${facts.redisClusterNodes.map(displayUrl).join(', ')} (rate limits and key-cache invalidation shared by every instance)`
      : facts.redisUrl
        ? `redis: ${displayUrl(facts.redisUrl)} (rate limits and key-cache invalidation shared by every instance)`
        : 'redis: none (rate limits and key-cache invalidation in this process only; set REDIS_URL to share them)',
  ];
  const signIn = `sign in: POST ${facts.url}/v1/auth/token with {"email", "password"}`;
  if (facts.hasUser) {
    lines.push(facts.signInAs ? `${signIn}, e.g. as ${facts.signInAs} (BOOTSTRAP_ADMIN_EMAIL)` : signIn);
    return { lines };
  }
  if (facts.signupAllowed) {
    lines.push(
      `no user yet: sign up with POST ${facts.url}/v1/auth/signup {"organization_name", "email", "password", "name"}`,
    );
    return { lines };
  }
  return {
    lines,
    warning:
      'no user exists and ALLOW_SIGNUP is off: nobody can sign in. Set BOOTSTRAP_ADMIN_EMAIL and ' +
      'BOOTSTRAP_ADMIN_PASSWORD (or ALLOW_SIGNUP=true) and start again.',
  };
}

/** A host the server listens on, as a URL a person can open on this machine. */
function localUrl(host: string, port: number): string {
  const everywhere = ['0.0.0.0', '::', ''];
  const shown = everywhere.includes(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}

/** Logs the start banner (info), and a warning when nobody can sign in. */
export async function logStartBanner(app: INestApplication, config: AppConfig, port: number): Promise<void> {
  const logger = new Logger('Start');
  const url = localUrl(config.HOST, port);
  const dashboard = app.get<ConfigOf<typeof dashboardConfig>>(dashboardConfig.KEY);
  const { lines, warning } = startBanner({
    version: packageVersion(),
    url,
    database: config.DATABASE_URL
      ? {
          kind: 'postgres',
          url: config.DATABASE_URL,
          directUrl: config.DATABASE_POOLER === 'transaction' ? config.DATABASE_DIRECT_URL : undefined,
        }
      : { kind: 'embedded', dataDir: config.DATA_DIR },
    redisUrl: config.REDIS_URL,
    redisClusterNodes: redisClusterNodes(config.REDIS_CLUSTER_NODES),
    hasUser: await app.get(OrganizationsService).hasAnyUser(),
    signupAllowed: config.ALLOW_SIGNUP,
    signInAs: app.get(BootstrapAdmin).signInAs,
    dashboardUrl: hasDashboardBuild(dashboard.directory) ? `${url}${DASHBOARD_ROOT}` : undefined,
  });
  for (const line of lines) logger.log(line);
  if (warning) logger.warn(warning);
}
