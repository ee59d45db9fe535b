import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { SessionError, SessionErrorCode } from './sessions.errors';

/** The header a cookie-authenticated request must carry, with the value `1`. */
export const CSRF_HEADER = 'X-Gatehouse-CSRF';

const requestOf = (context: ExecutionContext): Request => context.switchToHttp().getRequest<Request>();

/**
 * Cookie endpoints that act (refresh, sign-out) need `X-Gatehouse-CSRF: 1`. A cross-site form cannot
 * set a header, and a cross-site fetch that does needs a CORS preflight, which this API never allows;
 * SameSite=Strict already keeps the cookie off such requests, so this is the second, independent lock.
 */
@Injectable()
export class CsrfHeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (requestOf(context).headers[CSRF_HEADER.toLowerCase()] !== '1') {
      throw new SessionError(
        SessionErrorCode.CsrfCheckFailed,
        `This request needs the header "${CSRF_HEADER}: 1".`,
      );
    }
    return true;
  }
}

/**
 * A browser names the page that sent a request in `Origin`: when present, it must be this server's own
 * origin (scheme://host, as Express sees them behind TRUST_PROXY). Also on sign-in, so another site
 * cannot sign a visitor into an account of its choosing. Clients without `Origin` (curl, servers) pass.
 */
@Injectable()
export class SameOriginGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = requestOf(context);
    const origin = request.headers.origin;
    if (
      origin !== undefined &&
      origin.toLowerCase() !== `${request.protocol}://${request.host}`.toLowerCase()
    ) {
      throw new SessionError(
        SessionErrorCode.CsrfCheckFailed,
        'The request comes from another origin than this server.',
      );
    }
    return true;
  }
}
