import { defineIdKind } from '../../../src/common/ids';
import { definePermissions } from '../../../src/roles/permissions';
import { ProjectCreatedData } from './project.dto';

/**
 * What the projects extension adds to the shared registries, read when the app starts: the resource
 * `projects` with the four actions its routes use (no `execute`: nothing about a project runs), what the
 * built-in roles hold on it (administrator holds everything anyway; a role left out holds nothing), and
 * the prefix of its ids. The audit actions and webhook event types it records are declared per app
 * (ProjectsModule.onModuleInit), from the lists here.
 */
definePermissions('projects', {
  actions: ['create', 'read', 'update', 'delete'],
  grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] },
});
export const PROJECT_ID = defineIdKind('prj');

/** What ProjectsService records in the audit log; `?action=project.*` takes them all. */
export const PROJECT_AUDIT_ACTIONS = ['project.created', 'project.updated', 'project.deleted'] as const;
export type ProjectAuditAction = (typeof PROJECT_AUDIT_ACTIONS)[number];

/** The webhook events ProjectsService records, with the class of each one's `data`. */
export const PROJECT_WEBHOOK_EVENTS = { 'project.created': ProjectCreatedData } as const;
