import { ConfigOf } from '../../config/config-namespace';
import { accessConfig } from '../../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import type { AccessAttempt, AccessStep, KeyVerification, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { AccessTokenResolver } from '../credentials/access-token.resolver';
import { ApiKeyResolver } from '../credentials/api-key.resolver';
import { OAuthTokenResolver } from '../credentials/oauth-token.resolver';
import { TaskTokenResolver } from '../credentials/task-token.resolver';
import type { Request } from 'express';
import type { Principal } from '../principal';
import { extractCredential } from '../credentials/presented-credential';

/**
 * Step 1, credential: exactly one credential (an access token, an API key, a task token or an OAuth
 * access token, as a Bearer token, in `X-API-Key`, or unless switched off in `?api_key`) resolved to
 * `request.principal`. Each kind has its resolver and, but for OAuth's opaque tokens, its own shape; what
 * a kind may then do is the later steps' business. A
 * verification's credential is the API key value in its body.
 */
@Injectable()
export class CredentialStep implements AccessStep {
  constructor(
    @Inject(accessConfig.KEY) private readonly config: ConfigOf<typeof accessConfig>,
    private readonly accessTokens: AccessTokenResolver,
    private readonly apiKeys: ApiKeyResolver,
    private readonly taskTokens: TaskTokenResolver,
    private readonly oauthTokens: OAuthTokenResolver,
  ) {}

  /** Synchronous for an API key whose record is cached; an access token or a cache miss waits. */
  check({ request, verification }: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    if (verification) return this.verified(request, verification);
    const credential = extractCredential(request, this.config.allowQueryApiKey);
    if (credential === undefined) {
      return new AccessDenial(
        AccessDenialCode.MissingCredentials,
        'A credential is required: send "Authorization: Bearer <key or token>".',
      );
    }
    if (credential instanceof AccessDenial) return credential;

    // Access tokens only travel as Bearer; task tokens carry their prefix; anything else is an API key,
    // or, sent as Bearer without an API key's shape, an OAuth access token (opaque: no shape of its own).
    let resolved =
      credential.via === 'bearer' && this.accessTokens.looksLikeAccessToken(credential.value)
        ? this.accessTokens.resolve(credential.value)
        : this.taskTokens.looksLikeTaskToken(credential.value)
          ? this.taskTokens.resolve(credential.value)
          : this.apiKeys.resolve(credential, request.socket, request.ip ?? null);
    if (
      credential.via === 'bearer' &&
      resolved instanceof AccessDenial &&
      resolved.code === AccessDenialCode.MalformedKey &&
      this.oauthTokens.looksLikeOAuthToken(credential.value)
    ) {
      resolved = this.oauthTokens.resolve(credential.value, request);
    }
    return resolved instanceof Promise
      ? resolved.then((principal) => admit(request, principal))
      : admit(request, resolved);
  }

  /**
   * The key a verification names: an API key of the caller's organization only, decided as `resolve`
   * decides for one sent in a request (a key of another organization is not found).
   */
  private async verified(request: Request, verification: KeyVerification): Promise<StepOutcome> {
    const { principal, denial } = await this.apiKeys.resolveForOrganization(
      verification.organizationId,
      verification.key,
      request.ip ?? null,
      verification.connection,
    );
    if (principal) verification.named = principal;
    if (denial) return denial;
    request.principal = principal!;
    return undefined;
  }
}

function admit(request: Request, resolved: Principal | AccessDenial): StepOutcome {
  if (resolved instanceof AccessDenial) return resolved;
  request.principal = resolved;
  return undefined;
}
