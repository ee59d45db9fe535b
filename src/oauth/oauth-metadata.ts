import { allPermissions } from '../roles/permissions';
import { INTROSPECTION_PATH, OAUTH_PREFIX, OAUTH_ROUTES, OAuthServer } from './oauth-server';

/** RFC 8414 authorization server metadata, as the contract lists it. */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  revocation_endpoint: string;
  introspection_endpoint: string;
  response_types_supported: string[];
  grant_types_supported: string[];
  code_challenge_methods_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  scopes_supported: string[];
  client_id_metadata_document_supported: true;
  authorization_response_iss_parameter_supported: true;
}

/**
 * The discovery document, built from PUBLIC_URL rather than served by oidc-provider: its own document
 * names its endpoints after the request's host and lists OpenID Connect fields this server does not
 * offer. OAuthRoutes serves it, public, at both discovery paths.
 */
export function authorizationServerMetadata(server: OAuthServer): AuthorizationServerMetadata {
  const at = (path: string) => `${server.issuer}${OAUTH_PREFIX}${path}`;
  return {
    issuer: server.issuer,
    authorization_endpoint: at(OAUTH_ROUTES.authorization),
    token_endpoint: at(OAUTH_ROUTES.token),
    registration_endpoint: at(OAUTH_ROUTES.registration),
    revocation_endpoint: at(OAUTH_ROUTES.revocation),
    introspection_endpoint: `${server.issuer}${INTROSPECTION_PATH}`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...allPermissions()],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}
