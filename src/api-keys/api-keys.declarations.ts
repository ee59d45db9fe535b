import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the API-keys module adds to the shared registries: its resource and the ids it issues. */
definePermissions('api_keys', { grants: { api_manager: 'all' } });
export const API_KEY_ID = defineIdKind('key');
