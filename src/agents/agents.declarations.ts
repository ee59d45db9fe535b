import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the agents module adds to the shared registries: its resource and the ids it issues. */
definePermissions('agents', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
export const AGENT_ID = defineIdKind('agent');
