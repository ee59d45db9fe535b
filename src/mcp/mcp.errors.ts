import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum McpErrorCode {
  /** A browser page of an origin not in MCP_ALLOWED_ORIGINS (DNS rebinding, cross-site calls). */
  OriginNotAllowed = 'origin_not_allowed',
}

export class McpHttpError extends defineDomainErrors('mcp', {
  [McpErrorCode.OriginNotAllowed]: ErrorKind.Forbidden,
}) {}
