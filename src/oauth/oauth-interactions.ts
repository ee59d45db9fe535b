import { Injectable } from '@nestjs/common';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { OrganizationsService } from '../accounts/organizations.service';
import { originOf } from '../audit/request-origin.decorator';
import { Clock } from '../common/clock';
import { newId } from '../common/ids';
import { RolesService } from '../roles/roles.service';
import { DashboardSignIns } from '../sessions/dashboard-sign-ins';
import { setSessionCookie } from '../sessions/session-cookie';
import { OAUTH_GRANT_ID } from './oauth.declarations';
import { consentPage, errorPage, signInPage } from './oauth-pages';
import { OAuthGrants } from './oauth-grants';
import { hashOf, OAuthRecordsRepository } from './oauth-records.repository';
import { accountIdOf, OAuthAccounts } from './oauth-accounts';
import { INTERACTION_PATH, OAuthServer } from './oauth-server';
import type { OidcInteraction } from './oidc-provider.types';

const first = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : Array.isArray(value) && typeof value[0] === 'string'
      ? value[0]
      : undefined;

/**
 * The client asks for the password itself (`prompt=login`) or for a recent sign-in (`max_age`): the
 * dashboard session does not stand in for it.
 */
function asksForSignIn(interaction: OidcInteraction): boolean {
  const prompt = first(interaction.params.prompt) ?? '';
  return prompt.split(' ').includes('login') || interaction.params.max_age !== undefined;
}

/** The pages are never cached, framed (clickjacking the Allow button) or able to run a script. */
const NO_STORE = {
  'Cache-Control': 'no-store',
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
};

/**
 * The authorization endpoint's pages (oidc-provider's interactions): the dashboard's sign-in (a browser
 * signed in to the dashboard goes straight on as that user; else email and password start a dashboard
 * session, through the same check, login-attempt limiter and audit entry as the dashboard's own sign-in),
 * then consent naming the client, its redirect host, the organization and each permission asked.
 * Asked permissions the user does not hold are shown as not granted and left out of the grant; Deny
 * ends the request with `access_denied` (oidc-provider redirects it with `state` and `iss`).
 * Forms carry a CSRF value bound to the interaction (an HMAC of its uid, whose cookie oidc-provider checks).
 * Plain Express routes beside oidc-provider's own (OAuthRoutes mounts them at /oauth/interaction): pages
 * of the authorization endpoint, not operations of the API.
 */
@Injectable()
export class OAuthInteractions {
  constructor(
    private readonly server: OAuthServer,
    private readonly signIns: DashboardSignIns,
    private readonly accounts: OAuthAccounts,
    private readonly organizations: OrganizationsService,
    private readonly roles: RolesService,
    private readonly records: OAuthRecordsRepository,
    private readonly grants: OAuthGrants,
    private readonly clock: Clock,
  ) {}

  /** The pages, relative to /oauth/interaction. */
  router(): Router {
    const router = Router();
    const handle =
      (page: (uid: string, request: Request, response: Response) => Promise<void>) =>
      (request: Request, response: Response, next: NextFunction) => {
        page(String(request.params.uid), request, response).catch(next);
      };
    router.get(
      '/:uid',
      handle((uid, request, response) => this.show(uid, request, response)),
    );
    router.post(
      '/:uid/login',
      handle((uid, request, response) => this.signIn(uid, request, response)),
    );
    router.post(
      '/:uid/consent',
      handle((uid, request, response) => this.consent(uid, request, response)),
    );
    return router;
  }

  private async show(uid: string, request: Request, response: Response): Promise<void> {
    const interaction = await this.details(uid, request, response);
    if (!interaction) return;
    if (interaction.prompt.name === 'login') {
      const accountId = asksForSignIn(interaction) ? undefined : await this.accounts.signedIn(request);
      if (accountId) {
        await this.server.provider.interactionFinished(
          request,
          response,
          { login: { accountId } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      await this.sendSignIn(interaction, response, 200);
      return;
    }
    await this.showConsent(interaction, response);
  }

  private async signIn(uid: string, request: Request, response: Response): Promise<void> {
    const interaction = await this.details(uid, request, response);
    if (!interaction || !this.checkForm(interaction, request, response)) return;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const email = typeof body.email === 'string' ? body.email.trim().toLowerCase() : '';
    const password = typeof body.password === 'string' ? body.password : '';
    try {
      const { user, cookie } = await this.signIns.signIn({ email, password }, originOf(request));
      setSessionCookie(request, response, cookie);
      await this.server.provider.interactionFinished(
        request,
        response,
        { login: { accountId: accountIdOf(user.organizationId, user.id) } },
        { mergeWithLastSubmission: false },
      );
    } catch (error) {
      const status = (error as { getStatus?: () => number }).getStatus?.() ?? 500;
      if (status >= 500) throw error;
      await this.sendSignIn(
        interaction,
        response,
        status === 429 ? 429 : 401,
        status === 429
          ? 'Too many sign-in attempts; try again later.'
          : 'The email or password is not right.',
      );
    }
  }

  private async consent(uid: string, request: Request, response: Response): Promise<void> {
    const interaction = await this.details(uid, request, response);
    if (!interaction || !this.checkForm(interaction, request, response)) return;
    const decision = (request.body as Record<string, unknown> | undefined)?.decision;
    if (decision !== 'allow') {
      await this.server.provider.interactionFinished(
        request,
        response,
        { error: 'access_denied', error_description: 'The user denied the request.' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const view = await this.consentOf(interaction);
    if (!view) {
      response.status(400).set(NO_STORE).send(errorPage('Sign in again', 'This sign-in is no longer valid.'));
      return;
    }
    const { Grant } = this.server.provider;
    const clientId = String(interaction.params.client_id);
    const grant =
      (interaction.grantId ? await Grant.find(interaction.grantId) : undefined) ??
      new Grant({ accountId: interaction.session!.accountId, clientId });
    if (view.granted.length) grant.addResourceScope(view.resource, view.granted.join(' '));
    if (view.notHeld.length) grant.rejectResourceScope(view.resource, view.notHeld.join(' '));
    const grantId = await grant.save();
    const existing = await this.records.findGrantByProviderId(grantId);
    await this.grants.consented(
      {
        id: existing?.id ?? newId(OAUTH_GRANT_ID),
        providerGrantHash: hashOf(grantId),
        organizationId: view.organizationId,
        userId: view.userId,
        clientId,
        clientName: view.clientName === clientId ? null : view.clientName,
        scopes: [...new Set([...(existing?.scopes ?? []), ...view.granted])],
        resource: view.resource,
        createdAt: existing?.createdAt ?? this.clock.date(),
        lastUsedAt: existing?.lastUsedAt ?? null,
      },
      !existing,
    );
    await this.server.provider.interactionFinished(
      request,
      response,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    );
  }

  /** The interaction of this browser (its cookie), or an error page: never a redirect to the client. */
  private async details(
    uid: string,
    request: Request,
    response: Response,
  ): Promise<OidcInteraction | undefined> {
    try {
      const interaction = await this.server.provider.interactionDetails(request, response);
      if (interaction.uid === uid) return interaction;
    } catch {
      // Expired, unknown, or another browser's: the same page.
    }
    response
      .status(400)
      .set(NO_STORE)
      .send(
        errorPage(
          'Authorization expired',
          'This authorization request is unknown or has expired. Start again from the application.',
        ),
      );
    return undefined;
  }

  private checkForm(interaction: OidcInteraction, request: Request, response: Response): boolean {
    const sent = (request.body as Record<string, unknown> | undefined)?.csrf;
    const expected = Buffer.from(this.server.formKey(interaction.uid));
    if (
      typeof sent === 'string' &&
      sent.length === expected.length &&
      timingSafeEqual(Buffer.from(sent), expected)
    )
      return true;
    response.status(403).set(NO_STORE).send(errorPage('Form expired', 'Reload the page and try again.'));
    return false;
  }

  private async clientName(interaction: OidcInteraction): Promise<string> {
    const clientId = String(interaction.params.client_id);
    const client = await this.server.provider.Client.find(clientId).catch(() => undefined);
    return client?.clientName ?? clientId;
  }

  private async consentOf(interaction: OidcInteraction) {
    const accountId = interaction.session?.accountId;
    const user = accountId ? await this.accounts.activeUser(accountId) : undefined;
    if (!user) return undefined;
    const held = (await this.roles.permissionsOf(user.organizationId, user.role)) ?? new Set<string>();
    const asked = [
      ...new Set(
        String(interaction.params.scope ?? '')
          .split(' ')
          .filter(Boolean),
      ),
    ].filter((scope) => scope !== 'openid' && scope !== 'offline_access');
    const redirectUri = String(interaction.params.redirect_uri ?? '');
    let redirectHost = redirectUri;
    try {
      redirectHost = new URL(redirectUri).host;
    } catch {
      // Checked by oidc-provider already; shown as sent.
    }
    return {
      organizationId: user.organizationId,
      organizationName: (await this.organizations.nameOf(user.organizationId)) ?? user.organizationId,
      userId: user.id,
      userEmail: user.email,
      clientId: String(interaction.params.client_id),
      clientName: await this.clientName(interaction),
      redirectHost,
      resource: first(interaction.params.resource) ?? this.server.resources.v1,
      granted: asked.filter((permission) => held.has(permission as never)),
      notHeld: asked.filter((permission) => !held.has(permission as never)),
    };
  }

  /** The sign-in page of an interaction, with `status` and, after a refused attempt, why. */
  private async sendSignIn(
    interaction: OidcInteraction,
    response: Response,
    status: number,
    error?: string,
  ): Promise<void> {
    response
      .status(status)
      .set(NO_STORE)
      .send(
        signInPage({
          action: `${INTERACTION_PATH}/${interaction.uid}/login`,
          csrf: this.server.formKey(interaction.uid),
          clientName: await this.clientName(interaction),
          ...(error ? { error } : {}),
        }),
      );
  }

  private async showConsent(interaction: OidcInteraction, response: Response): Promise<void> {
    const view = await this.consentOf(interaction);
    if (!view) {
      // The signed-in user is gone or deactivated since: sign in again (the result replaces the account).
      await this.sendSignIn(interaction, response, 200);
      return;
    }
    response
      .status(200)
      .set(NO_STORE)
      .send(
        consentPage({
          ...view,
          action: `${INTERACTION_PATH}/${interaction.uid}/consent`,
          csrf: this.server.formKey(interaction.uid),
        }),
      );
  }
}
