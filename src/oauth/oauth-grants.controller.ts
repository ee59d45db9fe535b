import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { ANY_CREDENTIAL, NoContent, Operation } from '../access/route-access.decorators';
import { actorOf } from '../audit/audit.service';
import { OAuthGrantPage, OAuthGrantResponse } from './dto/oauth-grant.dto';
import { OAuthGrants } from './oauth-grants';
import { OAuthError, OAuthErrorCode } from './oauth.errors';

/**
 * The grants users gave OAuth clients (CONTRACT, "AI assistants"): a caller sees and ends its own (for
 * an API key, its owner's); `api_keys:read` shows the organization's, `api_keys:delete` ends any of them.
 * Another user's grant without that permission answers as an unknown one.
 */
@ApiTags('oauth')
@Controller('v1/oauth/grants')
export class OAuthGrantsController {
  constructor(private readonly grants: OAuthGrants) {}

  @Get()
  @Operation(
    ANY_CREDENTIAL,
    "List the caller's OAuth grants, or with api_keys:read the organization's",
    OAuthGrantPage,
  )
  async list(@Principal() principal: Principal): Promise<OAuthGrantPage> {
    const all = principal.permissions.has('api_keys:read');
    if (!all && !principal.userId) return { data: [], next_cursor: null };
    const grants = await this.grants.list(principal.organizationId, all ? undefined : principal.userId!);
    return { data: grants.map(OAuthGrantResponse.of), next_cursor: null };
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation(ANY_CREDENTIAL, 'Revoke an OAuth grant: every token of it is refused at once', NoContent, 404)
  async revoke(@Principal() principal: Principal, @Param('id') id: string): Promise<void> {
    const any = principal.permissions.has('api_keys:delete');
    const revoked =
      (any || principal.userId) &&
      (await this.grants.revoke(
        principal.organizationId,
        id,
        any ? undefined : principal.userId!,
        actorOf(principal),
      ));
    if (!revoked) throw new OAuthError(OAuthErrorCode.GrantNotFound, 'The grant was not found.');
  }
}
