import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ConfigOf } from '../config/config-namespace';
import { mcpConfig } from '../config/namespaces';
import { McpErrorCode, McpHttpError } from './mcp.errors';

/**
 * MCP's transport rule against DNS rebinding: a request that carries an Origin (a browser page) is
 * refused unless that origin is allowed (MCP_ALLOWED_ORIGINS; none by default). Middleware, so that it
 * comes before the key check: a page of another site learns nothing about the credential it sent.
 */
@Injectable()
export class McpOriginCheck implements NestMiddleware {
  private readonly allowed: ReadonlySet<string>;

  constructor(@Inject(mcpConfig.KEY) config: ConfigOf<typeof mcpConfig>) {
    this.allowed = new Set(config.allowedOrigins);
  }

  use(request: Request, _response: Response, next: NextFunction): void {
    const origin = request.headers.origin;
    if (origin !== undefined && !this.allowed.has(origin)) {
      return next(new McpHttpError(McpErrorCode.OriginNotAllowed, `The origin ${origin} may not call /mcp.`));
    }
    next();
  }
}
