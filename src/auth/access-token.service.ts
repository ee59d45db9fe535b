import { ConfigOf } from '../config/config-namespace';
import { authConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { JwtService, TokenExpiredError } from '@nestjs/jwt';
import { randomBytes } from 'node:crypto';
import { AuthError, AuthErrorCode } from './auth.errors';

export interface AccessTokenClaims {
  sub: string;
  org: string;
  iat: number;
  exp: number;
  jti: string;
  /**
   * The dashboard session the token was issued for (POST /v1/auth/session). The key check refuses such
   * a token once its session has ended, so signing out ends it at once, not when it expires.
   */
  sid?: string;
}

export interface IssuedAccessToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Short-lived access tokens for account sessions: HS256 JWTs (@nestjs/jwt, configured in AuthModule).
 * They carry only ids; the user's current role and active flag are read at every request, so
 * deactivation and demotion apply at once.
 */
@Injectable()
export class AccessTokenService {
  constructor(
    private readonly jwt: JwtService,
    @Inject(authConfig.KEY) private readonly config: ConfigOf<typeof authConfig>,
  ) {}

  /** A JWT's shape, as opposed to an API key's: decides which resolver a Bearer credential goes to. */
  static looksLikeAccessToken(value: string): boolean {
    // An API key has no dot: most calls end at the first check.
    return value.includes('.') && JWT_SHAPE.test(value);
  }

  issue(user: { id: string; organizationId: string }, sessionId?: string): IssuedAccessToken {
    const ttl = this.config.accessTokenTtlSeconds;
    const claims = { sub: user.id, org: user.organizationId, jti: randomBytes(12).toString('base64url') };
    const access_token = this.jwt.sign(sessionId ? { ...claims, sid: sessionId } : claims, {
      expiresIn: ttl,
    });
    return { access_token, token_type: 'Bearer', expires_in: ttl };
  }

  /** The claims of a token this service signed and that has not expired; refused otherwise. */
  verify(token: string): AccessTokenClaims {
    let claims: Partial<AccessTokenClaims>;
    try {
      claims = this.jwt.verify<Partial<AccessTokenClaims>>(token);
    } catch (error) {
      if (error instanceof TokenExpiredError) {
        throw new AuthError(AuthErrorCode.TokenExpired, 'The access token has expired; request a new one.');
      }
      throw new AuthError(AuthErrorCode.InvalidCredentials, 'The access token is not valid.');
    }
    if (
      typeof claims.sub !== 'string' ||
      typeof claims.org !== 'string' ||
      (claims.sid !== undefined && typeof claims.sid !== 'string')
    ) {
      throw new AuthError(AuthErrorCode.InvalidCredentials, 'The access token is not valid.');
    }
    return claims as AccessTokenClaims;
  }
}
