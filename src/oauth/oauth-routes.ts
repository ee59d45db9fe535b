import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Application, NextFunction, Request, Response } from 'express';
import { OAuthInteractions } from './oauth-interactions';
import { authorizationServerMetadata } from './oauth-metadata';
import {
  INTERACTION_PATH,
  INTROSPECTION_PATH,
  OAUTH_PREFIX,
  OAUTH_ROUTES,
  OAuthServer,
} from './oauth-server';

/** RFC 8414's path, and OpenID Connect's, which MCP clients also try: the same document at both. */
export const DISCOVERY_PATHS = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
];

/**
 * Mounts the authorization server on the Express app when the module starts: the discovery documents,
 * the sign-in and consent pages, then oidc-provider itself under /oauth (the registration limit in front
 * of its registration endpoint). These are the OAuth protocol's endpoints and pages, not operations of
 * the API: plain Express layers, outside Nest's router and the OpenAPI document, as oidc-provider's own
 * are. Nest adds its routes before the modules' onModuleInit, so POST /oauth/introspect (a Nest route,
 * behind the key check) is matched first; the provider passes it on, so that its other methods get the
 * app's 405.
 */
@Injectable()
export class OAuthRoutes implements OnModuleInit {
  constructor(
    private readonly server: OAuthServer,
    private readonly interactions: OAuthInteractions,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  async onModuleInit(): Promise<void> {
    const provider = await this.server.start();
    const express = this.adapterHost.httpAdapter.getInstance<Application>();
    const document = JSON.stringify(authorizationServerMetadata(this.server));
    const discovery = (_request: Request, response: Response) => {
      response
        .status(200)
        .set({ 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'public, max-age=300' })
        .send(document);
    };
    for (const path of DISCOVERY_PATHS) express.get(path, discovery);
    express.use(INTERACTION_PATH, this.interactions.router());
    express.use(`${OAUTH_PREFIX}${OAUTH_ROUTES.registration}`, this.server.registrationLimit, withoutScope);
    const callback = provider.callback();
    const introspection = INTROSPECTION_PATH.slice(OAUTH_PREFIX.length);
    express.use(OAUTH_PREFIX, (request: Request, response: Response, next: NextFunction) => {
      if (request.path === introspection) return next();
      callback(request, response);
    });
  }
}

/**
 * A registration's `scope` (the MCP SDK's client sends the scopes it saw in a 401) names permissions,
 * which are this server's resource scopes, not the provider's own (openid, offline_access) that
 * registration checks it against: the client keeps none, and each authorization asks for what it needs.
 */
function withoutScope(request: Request, _response: Response, next: NextFunction): void {
  if (request.method === 'POST' && request.body && typeof request.body === 'object')
    delete request.body.scope;
  next();
}
