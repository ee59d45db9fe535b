import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum TaskErrorCode {
  NotFound = 'not_found',
  InvalidIdempotencyKey = 'invalid_idempotency_key',
  IdempotencyKeyReused = 'idempotency_key_reused',
  UnknownAgentType = 'unknown_agent_type',
  AgentNotFound = 'agent_not_found',
  AgentRequired = 'agent_required',
  AttachmentNotFound = 'attachment_not_found',
  TaskFinished = 'task_finished',
}

export class TaskError extends defineDomainErrors('tasks', {
  [TaskErrorCode.NotFound]: ErrorKind.NotFound,
  [TaskErrorCode.InvalidIdempotencyKey]: ErrorKind.InvalidInput,
  [TaskErrorCode.IdempotencyKeyReused]: ErrorKind.Conflict,
  [TaskErrorCode.UnknownAgentType]: ErrorKind.Unprocessable,
  [TaskErrorCode.AgentNotFound]: ErrorKind.Unprocessable,
  [TaskErrorCode.AgentRequired]: ErrorKind.Unprocessable,
  [TaskErrorCode.AttachmentNotFound]: ErrorKind.Unprocessable,
  [TaskErrorCode.TaskFinished]: ErrorKind.Conflict,
}) {}
