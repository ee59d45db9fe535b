import { defineIdKind } from '../common/ids';
import { definePermissions, STANDARD_ACTIONS } from '../roles/permissions';

/** What the API-keys module adds to the shared registries: its resource and the ids it issues. */
// `verify`: checking another key's value for one's own services (POST /v1/keys/verify).
definePermissions('api_keys', { actions: [...STANDARD_ACTIONS, 'verify'], grants: { api_manager: 'all' } });
export const API_KEY_ID = defineIdKind('key');
