import { Injectable } from '@nestjs/common';
import { isIdOf } from '../../common/ids';
import { API_KEY_ID } from '../../api-keys/api-keys.declarations';
import { TaskTokens } from '../../tasks/run-tokens/task-tokens';
import type { Permission } from '../../roles/permissions';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { Principal } from '../principal';
import { AccessTokenResolver } from './access-token.resolver';
import { ApiKeyResolver } from './api-key.resolver';

/**
 * The most a task token can be granted (CONTRACT, "Agent runs"): read its task, read its files, upload
 * output files, post its events. The permission step keeps each to the token's own task and files
 * (`@TaskTokenAccess` on the routes); everything else is refused there.
 */
export const TASK_TOKEN_PERMISSIONS: readonly Permission[] = [
  'tasks:read',
  'tasks:create',
  'files:read',
  'files:create',
];

/**
 * A task token to a Principal: the creator of its task (the key or user that created it) as it stands
 * now, narrowed to TASK_TOKEN_PERMISSIONS and to the task. Its requests count in the usage, windows
 * and concurrency of that key, but spend none of its credits (the task's reservation pays for the run),
 * and the key's IP and referrer restrictions do not follow it: it is used by the agent, from the agent's
 * network, for one run only. The token's liveness and the creator's standing are read on every request.
 */
@Injectable()
export class TaskTokenResolver {
  constructor(
    private readonly tokens: TaskTokens,
    private readonly apiKeys: ApiKeyResolver,
    private readonly accessTokens: AccessTokenResolver,
  ) {}

  looksLikeTaskToken(value: string): boolean {
    return TaskTokens.looksLikeTaskToken(value);
  }

  async resolve(token: string): Promise<Principal | AccessDenial> {
    const run = await this.tokens.lookup(token);
    if (!run) return new AccessDenial(AccessDenialCode.InvalidCredentials, 'The task token is not valid.');
    if (!run.live) {
      return new AccessDenial(
        AccessDenialCode.TaskTokenExpired,
        "The task token's run has ended, was cancelled or was taken over by another attempt.",
      );
    }
    const creator = await this.creatorOf(run.organizationId, run.createdBy);
    if (creator instanceof AccessDenial) {
      return new AccessDenial(
        AccessDenialCode.Forbidden,
        `The credential that created this task can no longer act (${creator.code}).`,
      );
    }
    const permissions = new Set(TASK_TOKEN_PERMISSIONS.filter((p) => creator.permissions.has(p)));
    return {
      kind: 'task',
      organizationId: creator.organizationId,
      userId: creator.userId,
      apiKeyId: creator.apiKeyId,
      role: creator.role,
      permissions,
      key: creator.key && {
        ...creator.key,
        hideCredentials: true,
        allowedIps: [],
        allowedReferrers: [],
        // Neither the key's balance nor its identity's: the task's reservation pays for the run. The
        // identity's windows still count the token's requests, as the key's do.
        credits: null,
        identityControls: creator.key.identityControls && {
          ...creator.key.identityControls,
          credits: null,
        },
      },
      task: { taskId: run.taskId, fileIds: new Set(run.fileIds) },
    };
  }

  private creatorOf(organizationId: string, createdBy: string | null): Promise<Principal | AccessDenial> {
    if (createdBy !== null && isIdOf(API_KEY_ID, createdBy))
      return this.apiKeys.byId(organizationId, createdBy);
    if (createdBy !== null) return this.accessTokens.byId(organizationId, createdBy);
    return Promise.resolve(new AccessDenial(AccessDenialCode.InvalidCredentials, 'The task has no creator.'));
  }
}
