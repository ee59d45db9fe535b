import { Inject, Injectable } from '@nestjs/common';
import type { AgentCard } from '@a2a-js/sdk';
import type { Request } from 'express';
import type { Principal } from '../access/principal';
import { AgentsService } from '../agents/agents.service';
import { outboundCredentialHeaders } from '../auth/outbound-credentials';
import { packageVersion } from '../common/package-version';
import { ConfigOf } from '../config/config-namespace';
import { oauthConfig, publicConfig } from '../config/namespaces';
import { FilesService } from '../files/files.service';
import { TaskCredits } from '../tasks/task-credits';
import { TaskEnds } from '../tasks/task-ends';
import { TaskEvents } from '../tasks/task-events';
import { TasksService } from '../tasks/tasks.service';
import { agentCardOf } from './a2a-cards';
import { GatehouseA2aHandler, type A2aHandlerDeps } from './a2a-request-handler';
import { A2aTaskViews } from './a2a-task-views';
import { A2aPushConfigs } from './push/a2a-push-configs';

/** What an A2A call does with tasks and files: the tasks module's services, and the files'. */
@Injectable()
export class A2aTaskServices {
  constructor(
    readonly tasks: TasksService,
    readonly taskEvents: TaskEvents,
    readonly ends: TaskEnds,
    readonly files: FilesService,
  ) {}
}

/** The organization's agents as A2A sees them: their cards, and a request handler per call. */
@Injectable()
export class A2aAgents {
  private readonly deps: A2aHandlerDeps;
  private readonly publicUrl: string;

  constructor(
    @Inject(publicConfig.KEY) publicSettings: ConfigOf<typeof publicConfig>,
    @Inject(oauthConfig.KEY) private readonly oauth: ConfigOf<typeof oauthConfig>,
    private readonly agents: AgentsService,
    private readonly credits: TaskCredits,
    { tasks, taskEvents, ends, files }: A2aTaskServices,
    push: A2aPushConfigs,
  ) {
    this.publicUrl = publicSettings.url;
    this.deps = {
      tasks,
      taskEvents,
      ends,
      files,
      push,
      views: new A2aTaskViews(this.publicUrl),
      publicUrl: this.publicUrl,
    };
  }

  /** The agent's card; the agent not found (another organization's, unknown) as the agents API answers. */
  async cardOf(principal: Principal, agentId: string): Promise<AgentCard> {
    return this.cardFor(await this.agents.getForNewTask(principal, agentId));
  }

  /** A handler of one request to the agent, with the request's credential, credits and signal. */
  async handlerFor(principal: Principal, agentId: string, request: Request, signal: AbortSignal) {
    const agent = await this.agents.getForNewTask(principal, agentId);
    return new GatehouseA2aHandler(this.deps, agent, this.cardFor(agent), {
      principal,
      credits: this.credits.forRequest(request),
      forwardKey: outboundCredentialHeaders(request)['X-API-Key'],
      signal,
    });
  }

  private cardFor(agent: Parameters<typeof agentCardOf>[0]): AgentCard {
    return agentCardOf(agent, {
      publicUrl: this.publicUrl,
      // Gatehouse's own version: the agents are versioned by the server that runs them.
      version: packageVersion(),
      scopes: this.oauth.defaultScopes,
    });
  }
}
