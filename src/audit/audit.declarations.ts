import { defineIdKind } from '../common/ids';
import { definePermissions } from '../roles/permissions';

/** What the audit module adds to the shared registries: its resource and the ids it issues. */
definePermissions('audit', { grants: { api_manager: ['read'] } });
export const AUDIT_ENTRY_ID = defineIdKind('aud');

/** What AuditService records itself: a refused use of a key (`recordDenial`), in every process. */
export const AUDIT_MODULE_ACTIONS = ['key.denied'] as const;
