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
  /** A task holds MAX_TASK_EVENTS events already. */
  TooManyTaskEvents = 'too_many_task_events',
  /** An agent's report for a run that ended between its token's check and the write. */
  TaskTokenExpired = 'task_token_expired',
  /** The creating key has fewer credits than the task's max_credits (after the request's own). */
  CreditsExhausted = 'credits_exhausted',
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
  [TaskErrorCode.TooManyTaskEvents]: ErrorKind.TooManyRequests,
  [TaskErrorCode.TaskTokenExpired]: ErrorKind.Unauthenticated,
  [TaskErrorCode.CreditsExhausted]: ErrorKind.TooManyRequests,
}) {}
