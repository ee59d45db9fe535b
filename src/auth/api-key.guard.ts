import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { IS_PUBLIC } from '../common/decorators';
import { RouteMetadataCache } from '../common/route-metadata';
import { unauthorized } from '../common/problem';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ApiKeyAuthenticator } from '../api-keys/api-key.authenticator';
import { AccessTokenAuthenticator } from './access-token.authenticator';
import { AccessTokenService } from './access-token.service';
import { rememberPresentedKey } from './outbound-credentials';
import { extractCredential, PresentedCredential } from './presented-credential';
import type { Principal } from './principal';

/**
 * First global guard, and the only place credentials are resolved. Every route that is not
 * `@Public()` needs exactly one credential: an access token or an API key, as a Bearer token, in
 * `X-API-Key`, or (unless switched off) in `?api_key`. The result lands on `request.principal`.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly isPublic: RouteMetadataCache<boolean>;

  constructor(
    reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly accessTokens: AccessTokenAuthenticator,
    private readonly apiKeys: ApiKeyAuthenticator,
  ) {
    this.isPublic = new RouteMetadataCache(reflector, IS_PUBLIC);
  }

  // Returns a plain boolean when the key was cached, so the common request creates no promise here.
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (this.isPublic.get(context)) return true;
    const request = context.switchToHttp().getRequest<Request>();
    const credential = extractCredential(request, this.config.ALLOW_QUERY_API_KEY);
    if (!credential)
      throw unauthorized(
        'missing_credentials',
        'A credential is required: send "Authorization: Bearer <key or token>".',
      );
    const principal = this.resolve(credential);
    if (principal instanceof Promise) {
      return principal.then((resolved) => this.admit(request, credential, resolved));
    }
    return this.admit(request, credential, principal);
  }

  private admit(request: Request, credential: PresentedCredential, principal: Principal): true {
    request.principal = principal;
    if (principal.key) rememberPresentedKey(request, credential.value);
    return true;
  }

  private resolve(credential: PresentedCredential): Principal | Promise<Principal> {
    // Access tokens only travel as Bearer; anything else must be an API key.
    if (credential.via === 'bearer' && AccessTokenService.looksLikeAccessToken(credential.value)) {
      return this.accessTokens.authenticate(credential.value);
    }
    return this.apiKeys.authenticate(credential);
  }
}
