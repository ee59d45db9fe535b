/**
 * The parts of oidc-provider (an ES module without type declarations) this module uses, typed loosely:
 * enough for the compiler to check our side of each call.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface OidcGrant {
  jti: string;
  accountId: string;
  clientId: string;
  addResourceScope(resource: string, scope: string): void;
  rejectResourceScope(resource: string, scope: string): void;
  getResourceScope(resource: string): string;
  save(): Promise<string>;
}

export interface OidcInteraction {
  uid: string;
  prompt: { name: string; reasons: string[]; details: Record<string, any> };
  params: Record<string, any>;
  session?: { accountId: string; uid?: string };
  grantId?: string;
  lastSubmission?: Record<string, unknown>;
}

export interface OidcClient {
  clientId: string;
  clientName?: string;
  redirectUris: string[];
}

export interface OidcAccessToken {
  jti: string;
  grantId: string;
  clientId: string;
  accountId: string;
  scope?: string;
  aud?: string | string[];
  exp: number;
  isExpired: boolean;
}

export interface OidcProvider {
  proxy: boolean;
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  use(middleware: (ctx: any, next: () => Promise<void>) => Promise<void>): void;
  on(event: string, listener: (...args: any[]) => void): void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<OidcInteraction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: {
    new (fields: { accountId: string; clientId: string }): OidcGrant;
    find(id: string): Promise<OidcGrant | undefined>;
  };
  Client: { find(id: string): Promise<OidcClient | undefined> };
  AccessToken: { find(value: string): Promise<OidcAccessToken | undefined> };
}

export interface OidcProviderModule {
  default: new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
  errors: Record<string, new (description?: string) => Error>;
  /** The documented way to change when the authorization endpoint asks for an interaction. */
  interactionPolicy: {
    Check: OidcCheckClass;
    base(): { get(name: 'login' | 'consent'): { checks: { add(check: unknown): void } } };
  };
}

export interface OidcCheckClass {
  new (reason: string, description: string, check: (ctx: any) => boolean | Promise<boolean>): unknown;
  readonly REQUEST_PROMPT: true;
  readonly NO_NEED_TO_PROMPT: false;
}
