import { Controller, Delete, Get, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Request, Response } from 'express';
import { Principal } from '../access/principal';
import { RequirePermissions, RequirePermissionsForBody } from '../access/route-access.decorators';
import { McpChallengeFilter } from './mcp-challenge.filter';
import { McpServerFactory } from './mcp-server.factory';
import { McpToolListStreams } from './mcp-tool-list-streams';
import { mcpRequestPermissions } from './mcp-tools';

/**
 * `/mcp`, MCP's Streamable HTTP transport on the official SDK, stateless: each HTTP request gets a
 * server made for its credential (McpServerFactory) and a transport without a session id, so any
 * instance answers any request and nothing is kept between them. The global guards run first, as on
 * every route: a `tools/call` is held to its tool's permission there (RequirePermissionsForBody), and
 * every request is rate-limited, charged and counted like a REST one. JSON-RPC, so not in the OpenAPI
 * document (docs/assistants.md describes it).
 */
@ApiExcludeController()
@Controller('mcp')
@UseFilters(McpChallengeFilter)
export class McpController {
  constructor(
    private readonly servers: McpServerFactory,
    private readonly streams: McpToolListStreams,
  ) {}

  @Post()
  @RequirePermissions()
  @RequirePermissionsForBody(mcpRequestPermissions)
  post(@Principal() principal: Principal, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(principal, request, response);
  }

  // The stream of server-to-client messages outside any call (tools/list_changed).
  @Get()
  @RequirePermissions()
  stream(
    @Principal() principal: Principal,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    return this.serve(principal, request, response, { followsToolList: true });
  }

  // Ends a session: stateless, there is none to end, and the SDK answers so.
  @Delete()
  @RequirePermissions()
  end(@Principal() principal: Principal, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.serve(principal, request, response);
  }

  private async serve(
    principal: Principal,
    request: Request,
    response: Response,
    { followsToolList = false } = {},
  ): Promise<void> {
    const server = this.servers.serverFor(principal, request);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    if (followsToolList) {
      this.streams.follow(principal.organizationId, server, (then) => response.on('close', then));
    }
    await server.connect(transport);
    await transport.handleRequest(request, response, request.body);
  }
}
