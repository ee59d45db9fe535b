import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the identities module adds to the shared registries: its resource and the ids it issues. */
definePermissions('identities', {
  actions: ['create', 'read', 'update', 'delete'],
  grants: { api_manager: 'all' },
});
export const IDENTITY_ID = defineIdKind('idt');
