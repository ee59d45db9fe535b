import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum AgentErrorCode {
  NotFound = 'not_found',
  UnknownAgentType = 'unknown_agent_type',
  InvalidConfig = 'invalid_config',
}

export class AgentError extends defineDomainErrors('agents', {
  [AgentErrorCode.NotFound]: ErrorKind.NotFound,
  // Defining an agent of a type nobody registered is a bad request (a task naming one is 422: tasks).
  [AgentErrorCode.UnknownAgentType]: ErrorKind.InvalidInput,
  [AgentErrorCode.InvalidConfig]: ErrorKind.InvalidInput,
}) {}
