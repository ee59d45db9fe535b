import { defineExtension } from '../../../src/extension';
import { ReverseAgentModule } from './reverse-agent.module';

/**
 * An agent type: no HTTP part (tasks and agents go through the core's routes) and no table. Its module is
 * the shared part, so the worker that takes its tasks has the runner too.
 */
export const reverseAgentExtension = defineExtension({
  name: 'reverse-agent',
  module: ReverseAgentModule,
});
