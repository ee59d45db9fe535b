import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the tasks module adds to the shared registries: its resource and the ids it issues. */
definePermissions('tasks', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
export const TASK_ID = defineIdKind('task');
