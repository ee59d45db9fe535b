import { datasetsExtension } from './datasets/datasets.extension';
import { maintenanceWindowExtension } from './maintenance-window/maintenance-window.extension';
import { projectsExtension } from './projects/projects.extension';
import { reverseAgentExtension } from './reverse-agent/reverse-agent.extension';

/**
 * The examples as a deployment would list them in src/extensions.ts, one line each. Only tests load
 * this list (test/extending.e2e-spec.ts boots the API and the worker with all of them); each example's
 * own test loads just its own. Production's list does not name them, so neither the served API nor
 * openapi.json has /v1/datasets or /v1/projects.
 */
export const EXAMPLE_EXTENSIONS = [
  reverseAgentExtension,
  datasetsExtension,
  maintenanceWindowExtension,
  projectsExtension,
];
