import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { bodyParsers } from '../common/body-parsers';
import { McpErrorCode, McpHttpError } from './mcp.errors';

export const MCP_PATH = '/mcp';

/**
 * Whether a request is for /mcp, from its raw URL as Express's router matches it (case-insensitive, a
 * trailing slash allowed): this runs for every request in the body-parsing layer, where `request.path`
 * would parse each URL, and a spelling it missed would pass the Origin check by.
 */
export function isMcpRequest(url: string): boolean {
  const end = url.indexOf('?');
  let path = end === -1 ? url : url.slice(0, end);
  if (path.length < MCP_PATH.length || path.length > MCP_PATH.length + 1) return false;
  if (path.endsWith('/')) path = path.slice(0, -1);
  return path.toLowerCase() === MCP_PATH;
}

/** A JSON-RPC body that carries `bytes` in base64 (4 characters per 3 bytes), with a megabyte for the rest. */
export function mcpBodyLimit(bytes: number): number {
  return Math.ceil(bytes / 3) * 4 + 1_048_576;
}

/**
 * What a request to /mcp meets before any route, in the one body-parsing layer every request passes
 * (configureApp), so that /mcp adds no layer to the path of other requests:
 * - MCP's transport rule against DNS rebinding: a request carrying an Origin (a browser page) is refused
 *   unless that origin is allowed (MCP_ALLOWED_ORIGINS; none by default), before the key check, so that
 *   a page of another site learns nothing about the credential it sent;
 * - a body bound that follows MCP_MAX_UPLOAD_BYTES: upload_file carries its bytes in base64.
 */
export function mcpRequests(config: {
  allowedOrigins: readonly string[];
  maxUploadBytes: number;
}): RequestHandler {
  const allowed = new Set(config.allowedOrigins);
  const parse = bodyParsers(mcpBodyLimit(config.maxUploadBytes));
  return (request: Request, response: Response, next: NextFunction) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !allowed.has(origin)) {
      return next(new McpHttpError(McpErrorCode.OriginNotAllowed, `The origin ${origin} may not call /mcp.`));
    }
    parse(request, response, next);
  };
}
