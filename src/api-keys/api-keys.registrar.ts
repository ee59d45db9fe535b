import { Injectable } from '@nestjs/common';
import { AuditSubjects } from '../audit/audit-subjects';
import { IdentityKeys } from '../identities/identity-keys';
import { RoleHolders } from '../roles/role-holders';
import { ApiKeysRepository } from './api-keys.repository';

/**
 * What modules below this one ask about keys without reading api_keys themselves: the audit log's key
 * names, an identity's key count, whether a key holds a role. Registered here, at start, so no service
 * of this module takes those registries as dependencies it does not otherwise use.
 */
@Injectable()
export class ApiKeysRegistrar {
  constructor(
    keys: ApiKeysRepository,
    auditSubjects: AuditSubjects,
    identityKeys: IdentityKeys,
    holders: RoleHolders,
  ) {
    // The audit log names keys, deleted ones too (GET /v1/audit-log?expand=actor,key).
    auditSubjects.register('api_key', (organizationId, ids) => keys.auditNamesOf(organizationId, ids));
    identityKeys.register((organizationId, identityIds, manager) =>
      keys.countByIdentity(organizationId, identityIds, manager),
    );
    holders.register((manager, organizationId, role) => keys.holdsRole(manager, organizationId, role));
  }
}
