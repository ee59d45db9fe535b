import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { ShutdownDrain } from '../common/shutdown-drain';
import type { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { InvalidationBus, type Invalidation } from '../cache-invalidation/invalidation-bus';

/**
 * The open MCP streams of this instance (GET /mcp: messages outside any call), by organization, and the
 * one message they are for: `notifications/tools/list_changed` when the organization's agents change on
 * any instance. The change arrives as an invalidation (AgentsService publishes it after the change
 * committed; the bus reaches every instance over Redis or PostgreSQL); a transport that heard nothing for
 * a while sends `all`, and every stream is told, since a list may have changed meanwhile.
 */
@Injectable()
export class McpToolListStreams implements OnModuleInit {
  private readonly byOrganization = new Map<string, Set<McpServer>>();

  constructor(
    private readonly invalidations: InvalidationBus,
    @Optional() drain?: ShutdownDrain,
  ) {
    // The port closes: the streams end, so the server does not wait for them (a client reconnects to
    // another instance).
    drain?.onRelease(() => {
      for (const servers of this.byOrganization.values())
        for (const server of servers) server.close().catch(() => undefined);
    });
  }

  onModuleInit(): void {
    this.invalidations.subscribe((invalidation) => this.heard(invalidation));
  }

  /** Keeps `server` told until `closed` fires (its stream ended). */
  follow(organizationId: string, server: McpServer, closed: (then: () => void) => void): void {
    let servers = this.byOrganization.get(organizationId);
    if (!servers) this.byOrganization.set(organizationId, (servers = new Set()));
    servers.add(server);
    closed(() => {
      servers.delete(server);
      if (!servers.size) this.byOrganization.delete(organizationId);
    });
  }

  /** How many of the organization's streams are open on this instance. */
  openCount(organizationId: string): number {
    return this.byOrganization.get(organizationId)?.size ?? 0;
  }

  private heard(invalidation: Invalidation): void {
    if (invalidation.kind === 'agents') this.tell(this.byOrganization.get(invalidation.organizationId));
    else if (invalidation.kind === 'all')
      for (const servers of this.byOrganization.values()) this.tell(servers);
  }

  private tell(servers: Set<McpServer> | undefined): void {
    // A stream that closed meanwhile is left by its close handler; a failed write has nothing to retry.
    for (const server of servers ?? []) server.sendToolListChanged().catch(() => undefined);
  }
}
