import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { InjectThrottlerStorage, type ThrottlerStorage } from '@nestjs/throttler';
import type { NextFunction, Request, Response } from 'express';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ConfigOf } from '../config/config-namespace';
import { httpConfig, oauthConfig, publicConfig } from '../config/namespaces';
import { allPermissions } from '../roles/permissions';
import { Secrets } from '../secrets/secrets';
import { ClientMetadataDocuments } from './client-metadata-documents';
import { OAuthAccounts, parseAccountId } from './oauth-accounts';
import { errorPage } from './oauth-pages';
import { OAuthRecordsRepository } from './oauth-records.repository';
import type { OidcProvider, OidcProviderModule } from './oidc-provider.types';

interface ExistingGrantContext {
  oidc: {
    account?: { accountId: string };
    result?: { consent?: { grantId?: string } };
    session: { grantIdFor(clientId: string): string | undefined };
    client: { clientId: string };
    provider: OidcProvider;
  };
}

/** Where oidc-provider's own endpoints are mounted; the discovery documents name them (oauth-metadata.ts). */
export const OAUTH_PREFIX = '/oauth';
export const OAUTH_ROUTES = {
  authorization: '/authorize',
  token: '/token',
  registration: '/register',
  revocation: '/revoke',
  jwks: '/jwks',
} as const;
/** Served by OAuthTokensController, behind the key check (the caller needs api_keys:verify). */
export const INTROSPECTION_PATH = `${OAUTH_PREFIX}/introspect`;
export const INTERACTION_PATH = `${OAUTH_PREFIX}/interaction`;

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
const CODE_TTL_SECONDS = 60;
const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;
const HOUR_MS = 3_600_000;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** RFC 8252 and the contract: https anywhere, http on a loopback host only. */
export function redirectUriProblem(uri: unknown): string | undefined {
  if (typeof uri !== 'string') return 'redirect_uris must be strings';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not a URL`;
  }
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'redirect_uris must be https, or http on 127.0.0.1, [::1] or localhost';
}

/**
 * oidc-provider is an ES module: loaded with a real dynamic import, which TypeScript's CommonJS output
 * would turn into require() (jest's module registry cannot require an ES module; Node's can, jest's
 * `--experimental-vm-modules` import can).
 */
function loadOidcProvider(): Promise<OidcProviderModule> {
  // The only way to keep `import()` through the CommonJS build (see above).
  return eval('import("oidc-provider")') as Promise<OidcProviderModule>;
}

/**
 * The OAuth 2.1 authorization server: oidc-provider, configured for the contract (authorization code with
 * PKCE S256 only, resource indicators `<PUBLIC_URL>/mcp`, `<PUBLIC_URL>/v1` and `<PUBLIC_URL>/a2a`, refresh token rotation
 * with reuse detection, open dynamic client registration, client ID metadata documents), its state in
 * PostgreSQL (OAuthRecordsRepository). OAuthRoutes mounts it on the Express app under /oauth.
 */
@Injectable()
export class OAuthServer implements OnModuleInit {
  private readonly logger = new Logger(OAuthServer.name);
  private instance?: OidcProvider;
  private oidcErrors?: OidcProviderModule['errors'];
  readonly resources: { mcp: string; v1: string; a2a: string };
  readonly issuer: string;

  constructor(
    @Inject(publicConfig.KEY) publicSettings: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) private readonly config: ConfigOf<typeof oauthConfig>,
    @Inject(httpConfig.KEY) private readonly http: ConfigOf<typeof httpConfig>,
    private readonly records: OAuthRecordsRepository,
    private readonly secrets: Secrets,
    private readonly clientDocuments: ClientMetadataDocuments,
    private readonly accounts: OAuthAccounts,
    @InjectThrottlerStorage() private readonly throttler: ThrottlerStorage,
  ) {
    this.issuer = publicSettings.url.replace(/\/+$/, '');
    this.resources = { mcp: `${this.issuer}/mcp`, v1: `${this.issuer}/v1`, a2a: `${this.issuer}/a2a` };
  }

  get provider(): OidcProvider {
    if (!this.instance) throw new Error('OAuthServer: the provider starts with the module (onModuleInit).');
    return this.instance;
  }

  get errors(): OidcProviderModule['errors'] {
    if (!this.oidcErrors) throw new Error('OAuthServer: the provider starts with the module (onModuleInit).');
    return this.oidcErrors;
  }

  /** Keys the CSRF value of the interaction forms (OAuthInteractionsController). */
  formKey(uid: string): string {
    return createHmac('sha256', this.secrets.tokenSigningSecret)
      .update(`oauth-form:${uid}`)
      .digest('base64url');
  }

  private starting?: Promise<OidcProvider>;

  onModuleInit(): Promise<void> {
    return this.start().then(() => undefined);
  }

  /** Builds the provider once; OAuthRoutes mounts it (and awaits this first). */
  start(): Promise<OidcProvider> {
    this.starting ??= this.build();
    return this.starting;
  }

  private async build(): Promise<OidcProvider> {
    const oidc = await loadOidcProvider();
    this.oidcErrors = oidc.errors;
    const provider = new oidc.default(this.issuer, this.configuration(oidc));
    provider.proxy = this.http.trustProxy !== false && this.http.trustProxy !== 0;
    provider.use(async (ctx, next) => {
      // No `scope`: OAUTH_DEFAULT_SCOPES (the contract's default), as if the client had asked for them.
      if (ctx.path === OAUTH_ROUTES.authorization && ctx.method === 'GET' && !ctx.query.scope)
        ctx.query = { ...ctx.query, scope: this.config.defaultScopes.join(' ') };
      await next();
    });
    provider.on('server_error', (_ctx: unknown, error: Error) =>
      this.logger.error(`oidc-provider: ${error.message}`, error.stack),
    );
    this.instance = provider;
    return provider;
  }

  /** OAUTH_REGISTRATIONS_PER_HOUR registrations per client address, counted where the rate limits count. */
  readonly registrationLimit = (request: Request, response: Response, next: NextFunction): void => {
    if (request.method !== 'POST') return next();
    const limit = this.config.registrationsPerHour;
    this.throttler
      .increment(`address:${request.ip ?? 'unknown'}`, HOUR_MS, limit, 0, 'oauth-registration')
      .then((count) => {
        if (count.totalHits <= limit) return next();
        response
          .status(429)
          .set('Retry-After', String(Math.max(1, Math.ceil(count.timeToExpire))))
          .set('Cache-Control', 'no-store')
          .json({
            error: 'rate_limited',
            error_description: `At most ${limit} clients an hour are registered from one address; try again later.`,
          });
      }, next);
  };

  private async activeUser(accountId: string): Promise<boolean> {
    return (await this.accounts.activeUser(accountId)) !== undefined;
  }

  /**
   * oidc-provider's prompts, with one more reason to ask for a sign-in: the browser's dashboard session
   * (OAuthAccounts.signedIn) is not the provider's session's account, because it ended (signed out,
   * idle, capped, its user deactivated) or another user signed in since. The provider's own session
   * cookie never outlives the dashboard's sign-in; the interaction page then signs in with the dashboard
   * session when there is one (OAuthInteractions.show), else shows the sign-in, which starts one.
   */
  private interactionPolicy(oidc: OidcProviderModule): unknown {
    const { Check, base } = oidc.interactionPolicy;
    const policy = base();
    policy
      .get('login')
      .checks.add(
        new Check(
          'dashboard_session',
          'The dashboard session of this browser ended',
          async (ctx: { req: IncomingMessage; oidc: { session: { accountId?: string } } }) =>
            ctx.oidc.session.accountId !== undefined &&
            (await this.accounts.signedIn(ctx.req)) !== ctx.oidc.session.accountId
              ? Check.REQUEST_PROMPT
              : Check.NO_NEED_TO_PROMPT,
        ),
      );
    return policy;
  }

  private configuration(oidc: OidcProviderModule): Record<string, unknown> {
    const { errors } = oidc;
    const records = this.records;
    const permissions = allPermissions().join(' ');
    const resources = new Set(Object.values(this.resources));
    const signingKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      format: 'jwk',
    });
    return {
      adapter: (model: string) => ({
        upsert: (id: string, payload: Record<string, unknown>, expiresIn?: number) =>
          records.upsert(model, id, payload, expiresIn),
        find: async (id: string) =>
          (await records.find(model, id)) ??
          (model === 'Client' ? await this.clientDocuments.httpDocument(id) : undefined),
        findByUid: (uid: string) => records.findByUid(model, uid),
        findByUserCode: (code: string) => records.findByUserCode(model, code),
        consume: (id: string) => records.consume(model, id),
        destroy: (id: string) => records.destroy(model, id),
        revokeByGrantId: (grantId: string) => records.revokeByGrantId(model, grantId),
      }),
      // Each instance signs nothing anyone keeps (no ID tokens: no `openid`; access tokens are opaque).
      jwks: { keys: [{ ...signingKey, alg: 'ES256', use: 'sig', kid: 'gatehouse-oauth' }] },
      cookies: {
        keys: [
          createHmac('sha256', this.secrets.tokenSigningSecret).update('oauth-cookies').digest('base64url'),
        ],
      },
      // Errors before the client and redirect_uri are valid: shown here, never redirected.
      renderError: (
        ctx: { type: string; body: string },
        out: { error?: string; error_description?: string },
      ) => {
        ctx.type = 'html';
        ctx.body = errorPage(
          'This authorization request cannot go on',
          `${out.error ?? 'invalid_request'}: ${out.error_description ?? 'the request is not valid.'}`,
        );
      },
      // A user gone or deactivated: their codes and refresh tokens are refused (`source`, the token being
      // exchanged: invalid_grant); their browser's session still names them, so that the consent page can
      // ask for a sign-in again (no existing grant is loaded for them, below).
      findAccount: async (_ctx: unknown, id: string, source?: unknown) => {
        if (source !== undefined && !(await this.activeUser(id))) return undefined;
        return { accountId: id, claims: () => ({ sub: parseAccountId(id)?.userId ?? id }) };
      },
      loadExistingGrant: async (ctx: ExistingGrantContext) => {
        if (!ctx.oidc.account || !(await this.activeUser(ctx.oidc.account.accountId))) return undefined;
        const grantId =
          ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
        return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
      },
      interactions: {
        policy: this.interactionPolicy(oidc),
        url: (_ctx: unknown, interaction: { uid: string }) => `${INTERACTION_PATH}/${interaction.uid}`,
      },
      routes: OAUTH_ROUTES,
      scopes: ['openid', 'offline_access'],
      responseTypes: ['code'],
      clientAuthMethods: ['none'],
      clientDefaults: {
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        id_token_signed_response_alg: 'ES256',
      },
      pkce: { required: () => true },
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL_SECONDS,
        AuthorizationCode: CODE_TTL_SECONDS,
        RefreshToken: REFRESH_TOKEN_TTL_SECONDS,
        Grant: REFRESH_TOKEN_TTL_SECONDS,
        Interaction: 600,
        Session: 14 * 86_400,
      },
      rotateRefreshToken: true,
      issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
        client.grantTypeAllowed('refresh_token'),
      expiresWithSession: () => false,
      extraClientMetadata: {
        properties: ['gatehouse_redirect_policy'],
        validator: (_ctx: unknown, key: string, _value: unknown, metadata: Record<string, unknown>) => {
          if (key !== 'gatehouse_redirect_policy') return;
          delete metadata.gatehouse_redirect_policy;
          // `web`: a redirect URI matches exactly, port included (a native client's loopback port is free).
          metadata.application_type = 'web';
          for (const uri of (metadata.redirect_uris as unknown[] | undefined) ?? []) {
            const problem = redirectUriProblem(uri);
            if (problem) throw new errors.InvalidRedirectUri(problem);
          }
        },
      },
      features: {
        devInteractions: { enabled: false },
        rpInitiatedLogout: { enabled: false },
        registration: { enabled: true, initialAccessToken: false },
        revocation: {
          enabled: true,
          // A public client revokes its own tokens only; another client's are left alone (RFC 7009 answers 200).
          allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) =>
            token.clientId === client.clientId,
        },
        // Served by OAuthTokensController: its caller presents a Gatehouse credential, not a client's.
        introspection: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf ?? this.resources.v1,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resource: string) => {
            if (!resources.has(resource)) throw new errors.InvalidTarget();
            return {
              scope: permissions,
              audience: resource,
              accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
              accessTokenFormat: 'opaque',
            };
          },
        },
        clientIdMetadataDocument: {
          enabled: true,
          ack: 'draft-02',
          // Through the outbound policy: a private or loopback host only with ALLOW_PRIVATE_NETWORK_TARGETS.
          allowFetch: (_ctx: unknown, clientId: string) => this.clientDocuments.mayFetch(clientId),
        },
      },
      fetch: (url: string) => this.clientDocuments.fetch(String(url)),
    };
  }
}
