import { EventActor } from '../../events/event-payloads.dto';

/** The client of an OAuth event, as GET /v1/oauth/grants names it. */
export class OAuthEventClient {
  client_id: string;
  /** The name the client registered with; null when it gave none. */
  client_name: string | null;
}

/** Every grant event: which grant, whose, for which client, what it holds, and who acted. */
export class OAuthGrantEventData {
  grant_id: string;
  user_id: string;
  client: OAuthEventClient;
  /** The permissions granted. */
  scopes: string[];
  /** `<PUBLIC_URL>/mcp`, `<PUBLIC_URL>/a2a` or `<PUBLIC_URL>/v1`. */
  resource: string;
  actor: EventActor;
}

export class OAuthGrantCreatedData extends OAuthGrantEventData {}

export class OAuthGrantRevokedData extends OAuthGrantEventData {}

/** A client first authorized by a user of the organization. */
export class OAuthClientRegisteredData {
  client: OAuthEventClient;
  actor: EventActor;
}
