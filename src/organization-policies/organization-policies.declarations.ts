import { definePermissions } from '../roles/permissions';

/**
 * What the organization-policies module adds to the shared registries: the `organization` resource
 * (its settings, read and changed as a whole). Administrators hold it; `api_manager` reads it, as it
 * reads everything but users and teams, so whoever makes keys can see the rules they must follow.
 */
definePermissions('organization', { actions: ['read', 'update'], grants: { api_manager: ['read'] } });
