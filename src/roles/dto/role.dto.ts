import { ApiProperty, ApiPropertyOptional, ApiPropertyOptions } from '@nestjs/swagger';
import { IsString, Matches, registerDecorator, ValidationArguments } from 'class-validator';
import { actionsOf, Permission } from '../permissions';
import { PERMISSION_SCHEMA_REFS } from '../permission-schemas';
import { ROLE_NAME_PATTERN } from '../../common/validators';

export type PermissionMap = Partial<Record<string, string[]>>;

/** `{agents: ["read", "execute"]}`: known resources, known actions, arrays of strings. */
function IsPermissionMap(): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isPermissionMap',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown) => permissionMapProblems(value).length === 0,
        defaultMessage: (args: ValidationArguments) => permissionMapProblems(args.value).join('; '),
      },
    });
}

export function permissionMapProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return ['permissions must be an object mapping a resource to an array of actions'];
  }
  const problems: string[] = [];
  for (const [resource, actions] of Object.entries(value)) {
    const known = actionsOf(resource);
    if (!known) problems.push(`permissions.${resource} is not a known resource`);
    if (!Array.isArray(actions)) {
      problems.push(`permissions.${resource} must be an array of actions`);
      continue;
    }
    for (const action of actions) {
      // An action another resource has is still unknown here: `roles:verify` is not a permission.
      if (typeof action !== 'string' || (known && !known.includes(action))) {
        problems.push(`permissions.${resource} has an unknown action ${JSON.stringify(action)}`);
      }
    }
  }
  return problems;
}

export function permissionsFromMap(map: PermissionMap): Permission[] {
  const out = new Set<Permission>();
  for (const [resource, actions] of Object.entries(map)) {
    for (const action of actions ?? []) out.add(`${resource}:${action}` as Permission);
  }
  return [...out].sort();
}

export function mapFromPermissions(permissions: Iterable<Permission>): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const permission of [...permissions].sort()) {
    const [resource, action] = permission.split(':');
    (map[resource] ??= []).push(action);
  }
  return map;
}

const PERMISSIONS_SCHEMA: ApiPropertyOptions = {
  type: 'object',
  description: 'Resource to actions. The resources and their actions: GET /v1/permissions.',
  propertyNames: PERMISSION_SCHEMA_REFS.resource,
  additionalProperties: { type: 'array', items: PERMISSION_SCHEMA_REFS.action },
  example: { agents: ['read', 'execute'], workflows: ['read'] },
} as ApiPropertyOptions;

export class CreateRoleDto {
  @ApiProperty({ example: 'agent_runner', pattern: ROLE_NAME_PATTERN.source })
  @IsString()
  @Matches(ROLE_NAME_PATTERN, { message: 'role_name must be 2-50 lowercase letters, digits or underscores' })
  role_name: string;

  @ApiProperty(PERMISSIONS_SCHEMA)
  @IsPermissionMap()
  permissions: PermissionMap;
}

export class UpdateRoleDto {
  @ApiProperty(PERMISSIONS_SCHEMA)
  @IsPermissionMap()
  permissions: PermissionMap;
}

export class RoleResponse {
  @ApiProperty({ type: String, nullable: true, description: 'null for built-in roles', example: 'role_3xT…' })
  id: string | null;
  @ApiProperty({ example: 'agent_runner' }) role_name: string;
  @ApiProperty(PERMISSIONS_SCHEMA) permissions: Record<string, string[]>;
  @ApiProperty() built_in: boolean;
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true }) created_at: string | null;
  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true }) updated_at: string | null;
}

export class RolePage {
  @ApiProperty({ type: [RoleResponse] }) data: RoleResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class CatalogueResourceResponse {
  @ApiProperty({ ...PERMISSION_SCHEMA_REFS.resource, example: 'agents' }) resource: string;
  @ApiProperty({ type: 'array', items: PERMISSION_SCHEMA_REFS.action, example: ['create', 'read'] })
  actions: string[];
}

/** GET /v1/permissions: every resource this server's modules declare, with its actions. */
export class PermissionCatalogueResponse {
  @ApiProperty({ type: [CatalogueResourceResponse] }) data: CatalogueResourceResponse[];
}
