import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { Principal } from '../access/principal';
import { Operation } from '../access/route-access.decorators';
import { IntrospectionResponse, IntrospectTokenDto } from './dto/introspection.dto';
import { OAuthTokens } from './oauth-tokens';

/**
 * RFC 7662 introspection for the platform's services: the caller presents its own Gatehouse credential
 * holding `api_keys:verify`, as for POST /v1/keys/verify (oidc-provider's own endpoint authenticates
 * OAuth clients, which is not who asks here). Only the caller's organization's tokens are described.
 */
@ApiTags('oauth')
@Controller('oauth')
export class OAuthTokensController {
  constructor(private readonly tokens: OAuthTokens) {}

  @Post('introspect')
  @HttpCode(200)
  @Operation('api_keys:verify', 'Introspect an OAuth access token (RFC 7662)', IntrospectionResponse, 400)
  async introspect(
    @Principal() principal: Principal,
    @Body() dto: IntrospectTokenDto,
  ): Promise<IntrospectionResponse> {
    const token = await this.tokens.resolve(dto.token);
    if (!token || token.organizationId !== principal.organizationId) return { active: false };
    return {
      active: true,
      scope: token.scopes.join(' '),
      client_id: token.clientId,
      sub: token.userId,
      aud: token.resource,
      exp: Math.floor(token.expiresAt.getTime() / 1000),
    };
  }
}
