import type { AgentCard } from '@a2a-js/sdk';
import type { Agent } from '../agents/agent.entity';
import { A2A_PATH } from './a2a-http';

/** The protocol versions every agent is served in, both over JSON-RPC at the same URL. */
export const A2A_VERSIONS = ['1.0', '0.3'] as const;
/** Where a client of /a2a learns which authorization server to ask (RFC 9728). */
export const A2A_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/a2a';
const BEARER_SCHEME = 'bearer';
const OAUTH_SCHEME = 'oauth2';
/** What the agents take and give: text, files of any type (attachments, output files), JSON results. */
const INPUT_MODES = ['text/plain', 'application/octet-stream'];
const OUTPUT_MODES = ['text/plain', 'application/json', 'application/octet-stream'];

export interface CardSettings {
  publicUrl: string;
  /** Gatehouse's version: the cards' `version`. */
  version: string;
  /** The scopes an OAuth client asks for to call agents (a token holds at most its user's). */
  scopes: readonly string[];
}

/**
 * An agent's card (CONTRACT, "Agents for other agents: A2A"), in the SDK's 1.0 form: its name and
 * description, one JSON-RPC interface per version at `<PUBLIC_URL>/a2a/{id}`, streaming and push
 * notifications, one skill for the agent, and two alternative ways to authenticate: a bearer API key or
 * access token, or an OAuth 2.1 token of this server's authorization code flow for the resource
 * `<PUBLIC_URL>/a2a`.
 */
export function agentCardOf(
  agent: Pick<Agent, 'id' | 'name' | 'type' | 'description'>,
  settings: CardSettings,
): AgentCard {
  const url = `${settings.publicUrl}${A2A_PATH}/${agent.id}`;
  const description = agent.description || `A Gatehouse agent of type "${agent.type}".`;
  return {
    name: agent.name,
    description,
    supportedInterfaces: A2A_VERSIONS.map((protocolVersion) => ({
      url,
      protocolBinding: 'JSONRPC',
      protocolVersion,
      tenant: '',
    })),
    provider: { organization: 'Gatehouse', url: settings.publicUrl },
    version: settings.version,
    documentationUrl: `${settings.publicUrl}/docs`,
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [BEARER_SCHEME]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            description: 'A Gatehouse API key or access token: Authorization: Bearer <credential>.',
            scheme: 'Bearer',
            bearerFormat: '',
          },
        },
      },
      [OAUTH_SCHEME]: {
        scheme: {
          $case: 'oauth2SecurityScheme',
          value: {
            description: `OAuth 2.1 (authorization code with PKCE) for the resource ${settings.publicUrl}${A2A_PATH}.`,
            flows: {
              flow: {
                $case: 'authorizationCode',
                value: {
                  authorizationUrl: `${settings.publicUrl}/oauth/authorize`,
                  tokenUrl: `${settings.publicUrl}/oauth/token`,
                  refreshUrl: `${settings.publicUrl}/oauth/token`,
                  scopes: Object.fromEntries(settings.scopes.map((scope) => [scope, scope])),
                  pkceRequired: true,
                },
              },
            },
            oauth2MetadataUrl: `${settings.publicUrl}/.well-known/oauth-authorization-server`,
          },
        },
      },
    },
    // Alternatives: either scheme alone is enough.
    securityRequirements: [
      { schemes: { [BEARER_SCHEME]: { list: [] } } },
      { schemes: { [OAUTH_SCHEME]: { list: [...settings.scopes] } } },
    ],
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: [
      {
        id: agent.id,
        name: agent.name,
        description,
        tags: [agent.type],
        examples: [],
        inputModes: INPUT_MODES,
        outputModes: OUTPUT_MODES,
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}
