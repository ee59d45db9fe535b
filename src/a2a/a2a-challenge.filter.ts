import { Catch, Inject } from '@nestjs/common';
import { ConfigOf } from '../config/config-namespace';
import { oauthConfig, publicConfig } from '../config/namespaces';
import { BearerChallengeFilter } from '../http/bearer-challenge.filter';
import { A2A_RESOURCE_METADATA_PATH } from './a2a-cards';
import { a2aRequestPermissions } from './a2a-permissions';

/** The key check's refusals on /a2a/…: problem+json with the challenge /mcp answers with (RFC 9728). */
@Catch()
export class A2aChallengeFilter extends BearerChallengeFilter {
  constructor(
    @Inject(publicConfig.KEY) publicUrl: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) oauth: ConfigOf<typeof oauthConfig>,
  ) {
    super(publicUrl.url, A2A_RESOURCE_METADATA_PATH, oauth.defaultScopes, (request) =>
      // The agent card's GET needs agents:read; a JSON-RPC call what its method needs.
      request.method === 'GET' ? ['agents:read'] : a2aRequestPermissions(request.body),
    );
  }
}
