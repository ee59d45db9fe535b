import { Controller, Get, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { permissionList } from '../roles/permissions';
import { RequirePermissions } from '../access/route-access.decorators';
import { VerifyResponse } from './dto/api-key-response.dto';
import { ApiKeyError, ApiKeyErrorCode } from './api-keys.errors';

@ApiTags('api-keys')
@Controller('v1/auth')
export class VerifyController {
  /** Any valid key may ask about itself; restrictions and rate limits apply as on any call. */
  @Get('verify')
  @RequirePermissions()
  @ApiOperation({ summary: 'Verify the presented API key and describe it' })
  @ApiOkResponse({ type: VerifyResponse })
  verify(@Principal() principal: Principal, @Req() request: Request): VerifyResponse {
    if (!principal.key)
      throw new ApiKeyError(ApiKeyErrorCode.ApiKeyRequired, 'Verify takes an API key, not an access token.');
    return {
      valid: true,
      key_id: principal.key.id,
      name: principal.key.name,
      role: principal.role,
      permissions: permissionList(principal.permissions),
      expires_at: principal.key.expiresAt?.toISOString() ?? null,
      meta: principal.key.meta,
      // Counted after this request's own credit (the credits step ran before the handler).
      credits_remaining: request.creditsRemaining ?? null,
    };
  }
}
