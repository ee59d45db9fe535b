import { Controller, Get, Header, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { permissionList } from '../roles/permissions';
import { ANY_CREDENTIAL, Operation } from '../access/route-access.decorators';
import { VerifyResponse } from './dto/api-key-response.dto';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';

/**
 * Verify's body, serialized once per cached key record up to its last field: all but
 * `credits_remaining` is fixed for a Principal (one per key record and channel, see api-key.resolver),
 * and this route sits on every integrator's hot path. Same bytes as `res.json` of the object.
 */
const bodyHeads = new WeakMap<Principal, string>();

function verifyBodyHead(principal: Principal, key: NonNullable<Principal['key']>): string {
  let head = bodyHeads.get(principal);
  if (head === undefined) {
    const fixed: Omit<VerifyResponse, 'credits_remaining'> = {
      valid: true,
      key_id: key.id,
      name: key.name,
      role: principal.role,
      permissions: permissionList(principal.permissions),
      expires_at: key.expiresAt?.toISOString() ?? null,
      meta: key.meta,
      identity: key.identity,
    };
    head = `${JSON.stringify(fixed).slice(0, -1)},"credits_remaining":`;
    bodyHeads.set(principal, head);
  }
  return head;
}

@ApiTags('api-keys')
@Controller('v1/auth')
export class VerifyController {
  // Any valid key may ask about itself; restrictions and rate limits apply as on any call.
  @Get('verify')
  @Operation(ANY_CREDENTIAL, 'Verify the presented API key and describe it', VerifyResponse)
  @Header('Content-Type', 'application/json; charset=utf-8')
  verify(@Req() request: Request): string {
    // The principal from the request rather than @Principal(): a custom parameter goes through Nest's
    // pipes (the global ValidationPipe), which on this route cost more than the rest of the handler.
    const principal = request.principal!;
    if (!principal.key)
      throw new ApiKeyError(ApiKeyErrorCode.ApiKeyRequired, 'Verify takes an API key, not an access token.');
    // Counted after this request's own credit (the credits step ran before the handler).
    return `${verifyBodyHead(principal, principal.key)}${request.creditsRemaining ?? null}}`;
  }
}
