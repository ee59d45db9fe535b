import { defineIdKind } from '../../../src/common/ids';
import { DatasetCreatedData } from './dataset.dto';
import { definePermissions } from '../../../src/roles/permissions';

/**
 * What the datasets extension adds to the shared registries, read when the app starts: the resource
 * `datasets` with the standard actions (create, read, update, delete, execute), what the built-in roles
 * hold on it (administrator holds everything anyway), and the prefix of its ids. The audit actions and
 * webhook event types it records are declared per app (DatasetsModule.onModuleInit), from the lists here.
 */
definePermissions('datasets', { grants: { viewer: ['read'], developer: 'all', api_manager: ['read'] } });
export const DATASET_ID = defineIdKind('ds');

/** What DatasetsService records in the audit log; `?action=dataset.*` takes them all. */
export const DATASET_AUDIT_ACTIONS = ['dataset.created', 'dataset.updated', 'dataset.deleted'] as const;
export type DatasetAuditAction = (typeof DATASET_AUDIT_ACTIONS)[number];

/** The webhook events DatasetsService records, with the class of each one's `data`. */
export const DATASET_WEBHOOK_EVENTS = { 'dataset.created': DatasetCreatedData } as const;
