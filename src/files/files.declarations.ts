import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the files module adds to the shared registries: its resource and the ids it issues. */
definePermissions('files', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
export const FILE_ID = defineIdKind('file');
