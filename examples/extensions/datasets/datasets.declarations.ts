import { defineIdKind } from '../../../src/common/ids';
import { definePermissions } from '../../../src/roles/permissions';

/**
 * What the datasets extension adds to the shared registries, read when the app starts: the resource
 * `datasets` with the standard actions (create, read, update, delete, execute), what the built-in roles
 * hold on it (administrator holds everything anyway), and the prefix of its ids.
 */
definePermissions('datasets', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
export const DATASET_ID = defineIdKind('ds');
