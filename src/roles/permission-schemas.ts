import type { OpenAPIObject } from '@nestjs/swagger';
import { allActions, allPermissions, permissionCatalogue } from './permissions';

/**
 * The permission vocabulary in the OpenAPI document. Decorators are evaluated when their file loads,
 * before every module has declared its resources, so DTOs point at these named schemas and the document
 * gets their values from the catalogue when it is built (createOpenApiDocument).
 */
export const PERMISSION_SCHEMA_REFS = {
  permission: { $ref: '#/components/schemas/Permission' },
  resource: { $ref: '#/components/schemas/Resource' },
  action: { $ref: '#/components/schemas/Action' },
} as const;

type Schemas = NonNullable<NonNullable<OpenAPIObject['components']>['schemas']>;

export function permissionSchemas(): Schemas {
  return {
    Permission: {
      type: 'string',
      description: '`<resource>:<action>`, as the modules of this server declare them.',
      enum: [...allPermissions()],
    },
    Resource: { type: 'string', enum: permissionCatalogue().map(({ resource }) => resource) },
    Action: { type: 'string', description: 'Not every resource has every action.', enum: [...allActions()] },
  };
}
