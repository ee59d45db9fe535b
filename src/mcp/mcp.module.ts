import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { FilesModule } from '../files/files.module';
import { TasksHttpModule } from '../tasks/tasks-http.module';
import { TasksModule } from '../tasks/tasks.module';
import { McpController } from './mcp.controller';
import { McpServerFactory } from './mcp-server.factory';
import { McpToolListStreams } from './mcp-tool-list-streams';
import { ProtectedResourceController } from './protected-resource.controller';

/**
 * AI assistants' face of the platform (CONTRACT, "AI assistants"): the MCP server at /mcp and the
 * metadata that points its clients at the authorization server. Every tool is a call of the module
 * that owns the work (agents, tasks, files), behind the same key check as REST. Its Origin check and body
 * bound sit in the app's body-parsing layer (mcp-http.ts, configureApp).
 */
@Module({
  imports: [AgentsModule, TasksModule, TasksHttpModule, FilesModule],
  controllers: [McpController, ProtectedResourceController],
  providers: [McpServerFactory, McpToolListStreams],
})
export class McpModule {}
