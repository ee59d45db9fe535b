import { Controller, Get, Param, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { A2A_VERSION_HEADER, AgentCard, formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS } from '@a2a-js/sdk';
import { isLegacyJsonRpcMethod, isV1JsonRpcMethod } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { Request, Response } from 'express';
import { Principal } from '../access/principal';
import { RequirePermissions, RequirePermissionsForBody } from '../access/route-access.decorators';
import { A2aAgents } from './a2a-agents';
import { A2aChallengeFilter } from './a2a-challenge.filter';
import { a2aRequestPermissions } from './a2a-permissions';

type JsonRpcEnvelope = { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };
const isStream = (value: unknown): value is AsyncGenerator<JsonRpcEnvelope, void, undefined> =>
  typeof (value as AsyncGenerator | undefined)?.[Symbol.asyncIterator] === 'function';

/**
 * `/a2a/{agent_id}`: every agent over the Agent2Agent protocol's JSON-RPC binding, 1.0 and 0.3, on the
 * official SDK's transport handlers (its v0.3 compatibility layer for the older method names), answered
 * as the SDK's own Express handler answers, in front of GatehouseA2aHandler. The global guards run
 * first, as on every route: each call is held to its method's permission (RequirePermissionsForBody),
 * and rate-limited, charged and counted like a REST request. JSON-RPC, so not in the OpenAPI document
 * (docs/agents-for-agents.md describes it).
 */
@ApiExcludeController()
@Controller('a2a')
@UseFilters(A2aChallengeFilter)
export class A2aController {
  constructor(private readonly agents: A2aAgents) {}

  /** The agent card: the 1.0 form for `A2A-Version: 1.0`, the 0.3 form without the header or for 0.3. */
  @Get(':agentId/.well-known/agent-card.json')
  @RequirePermissions('agents:read')
  async card(
    @Principal() principal: Principal,
    @Param('agentId') agentId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const card = await this.agents.cardOf(principal, agentId);
    const version = request.header(A2A_VERSION_HEADER) || undefined;
    if (version === undefined || version.startsWith('0.')) {
      // The SDK's own 0.3 card endpoint for this card, mounted here as Express mounts a router: it sees
      // the path below its mount point, its root (it answers the 0.x versions it does not serve too).
      const url = request.url;
      request.url = '/';
      legacyAgentCardRouter({ agentCardProvider: () => Promise.resolve(card), cache: { maxAge: 0 } })(
        request,
        response,
        (error?: unknown) => {
          request.url = url;
          response.status(500).json({ error: (error as Error | undefined)?.message ?? 'not served' });
        },
      );
      return;
    }
    response.setHeader('Vary', A2A_VERSION_HEADER);
    try {
      validateVersion(version, card, 'JSONRPC');
    } catch (error) {
      response.status(400).json(JsonRpcTransportHandler.mapToJSONRPCError(error));
      return;
    }
    response.json(AgentCard.toJSON(card));
  }

  @Post(':agentId')
  @RequirePermissions()
  @RequirePermissionsForBody(a2aRequestPermissions)
  async call(
    @Principal() principal: Principal,
    @Param('agentId') agentId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const body = request.body as { id?: string | number | null; method?: unknown } | undefined;
    // The two grammars are disjoint: v0.3's `message/send`, 1.0's `SendMessage` (the SDK's own test).
    const legacy = isLegacyJsonRpcMethod(body?.method) || !isV1JsonRpcMethod(body?.method);
    const errorOf = legacy
      ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
      : JsonRpcTransportHandler.mapToJSONRPCError;
    const envelopeOf = (error: unknown): JsonRpcEnvelope => ({
      jsonrpc: '2.0',
      id: body?.id ?? null,
      error: errorOf(error),
    });
    const left = new AbortController();
    response.on('close', () => left.abort());
    const handler = await this.agents.handlerFor(principal, agentId, request, left.signal);
    // An absent header is 0.3 (the SDK's ServerCallContext says so); only the card's versions are served.
    const context = new ServerCallContext({
      requestedVersion: request.header(A2A_VERSION_HEADER) || undefined,
    });
    let answer: JsonRpcEnvelope | AsyncGenerator<JsonRpcEnvelope, void, undefined>;
    try {
      validateVersion(context.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
      const transport = legacy
        ? new LegacyJsonRpcTransportHandler(handler)
        : new JsonRpcTransportHandler(handler);
      answer = await transport.handle(request.body as Record<string, unknown>, context);
    } catch (error) {
      response.status(200).json(envelopeOf(error));
      return;
    }
    if (!isStream(answer)) {
      response.status(200).json(answer);
      return;
    }
    await this.stream(answer, response, envelopeOf);
  }

  /**
   * A stream as Server-Sent Events, its first event read before the head is sent, as the SDK's handler
   * does: a stream that fails at once (a finished task's SubscribeToTask) is a JSON-RPC error answer,
   * not an event stream carrying one.
   */
  private async stream(
    events: AsyncGenerator<JsonRpcEnvelope, void, undefined>,
    response: Response,
    envelopeOf: (error: unknown) => JsonRpcEnvelope,
  ): Promise<void> {
    let first: IteratorResult<JsonRpcEnvelope>;
    try {
      first = await events.next();
    } catch (error) {
      response.status(200).json(envelopeOf(error));
      return;
    }
    response.writeHead(200, SSE_HEADERS);
    response.flushHeaders();
    try {
      if (!first.done) response.write(formatSSEEvent(first.value));
      for (let next = await events.next(); !next.done; next = await events.next()) {
        if (response.writableEnded || response.destroyed) break;
        response.write(formatSSEEvent(next.value));
      }
    } catch (error) {
      if (!response.writableEnded) response.write(formatSSEErrorEvent(envelopeOf(error)));
    } finally {
      await events.return(undefined);
      if (!response.writableEnded) response.end();
    }
  }
}
