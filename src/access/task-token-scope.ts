import type { Request } from 'express';
import { AccessDenial, AccessDenialCode } from './access-denial';
import type { Principal } from './principal';
import type { TaskTokenAccessKind } from './route-access.decorators';

const forbidden = (detail: string): AccessDenial => new AccessDenial(AccessDenialCode.Forbidden, detail);

/**
 * Why this principal may not use a route whose task-token access is `kind` (undefined: it may, as far
 * as task tokens go). A task token is held to its task and the task's files; a route only a task token
 * may call refuses every other credential.
 */
export function taskTokenRefusal(
  kind: TaskTokenAccessKind | undefined,
  principal: Principal,
  request: Request,
): AccessDenial | undefined {
  const run = principal.task;
  if (!run) {
    return kind === 'own_task_only'
      ? forbidden("Only the task token of the task's running attempt may call this route.")
      : undefined;
  }
  const id: unknown = request.params?.id;
  switch (kind) {
    case 'own_task':
    case 'own_task_only':
      return id === run.taskId ? undefined : forbidden('A task token acts only on its own task.');
    case 'task_file':
      return typeof id === 'string' && run.fileIds.has(id)
        ? undefined
        : forbidden("A task token reads only its task's attachments and output files.");
    case 'output_upload':
      return undefined;
    default:
      return forbidden(
        "A task token may only read its task and the task's files, upload output files and post the task's events.",
      );
  }
}
