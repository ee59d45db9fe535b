import { Inject, Injectable } from '@nestjs/common';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { unauthorized } from '../common/problem';

export interface AccessTokenClaims {
  sub: string;
  org: string;
  iat: number;
  exp: number;
  jti: string;
}

export interface IssuedAccessToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Short-lived access tokens for account sessions: compact HS256 JWTs. They carry only ids; the user's
 * current role and active flag are read at every request, so deactivation and demotion apply at once.
 */
@Injectable()
export class AccessTokenService {
  private readonly secret: Buffer;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.secret = Buffer.from(config.TOKEN_SIGNING_SECRET, 'utf8');
  }

  static looksLikeAccessToken(value: string): boolean {
    return JWT_SHAPE.test(value);
  }

  issue(user: { id: string; organizationId: string }): IssuedAccessToken {
    const now = Math.floor(Date.now() / 1000);
    const ttl = this.config.ACCESS_TOKEN_TTL_SECONDS;
    const claims: AccessTokenClaims = {
      sub: user.id,
      org: user.organizationId,
      iat: now,
      exp: now + ttl,
      jti: randomBytes(12).toString('base64url'),
    };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return {
      access_token: `${HEADER}.${payload}.${this.sign(`${HEADER}.${payload}`)}`,
      token_type: 'Bearer',
      expires_in: ttl,
    };
  }

  verify(token: string): AccessTokenClaims {
    const [header, payload, signature] = token.split('.');
    const expected = Buffer.from(this.sign(`${header}.${payload}`));
    const given = Buffer.from(signature ?? '');
    if (header !== HEADER || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw unauthorized('invalid_credentials', 'The access token is not valid.');
    }
    let claims: AccessTokenClaims;
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AccessTokenClaims;
    } catch {
      throw unauthorized('invalid_credentials', 'The access token is not valid.');
    }
    if (typeof claims.sub !== 'string' || typeof claims.org !== 'string' || typeof claims.exp !== 'number') {
      throw unauthorized('invalid_credentials', 'The access token is not valid.');
    }
    if (claims.exp <= Math.floor(Date.now() / 1000)) {
      throw unauthorized('token_expired', 'The access token has expired; request a new one.');
    }
    return claims;
  }

  private sign(input: string): string {
    return createHmac('sha256', this.secret).update(input).digest('base64url');
  }
}
