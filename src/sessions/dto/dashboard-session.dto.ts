import { ApiProperty, PickType } from '@nestjs/swagger';
import { UserResponse } from '../../accounts/dto/user.dto';
import type { User } from '../../accounts/user.entity';
import { AccessTokenResponse } from '../../auth/dto/auth.dto';
import { PERMISSION_SCHEMA_REFS } from '../../roles/permission-schemas';
import type { Permission } from '../../roles/permissions';

/** The signed-in user as the dashboard needs it: who, and what to offer. */
export class SessionUserResponse extends PickType(UserResponse, ['id', 'email', 'name', 'role'] as const) {
  @ApiProperty({
    type: 'array',
    items: PERMISSION_SCHEMA_REFS.permission,
    description: "The user's effective permissions: the dashboard offers only the controls they allow.",
    example: ['api_keys:read', 'api_keys:create'],
  })
  permissions: Permission[];

  static of(user: User, permissions: ReadonlySet<Permission>): SessionUserResponse {
    return {
      id: user.id,
      email: user.email,
      name: user.name,
      role: user.role,
      permissions: [...permissions].sort(),
    };
  }
}

/**
 * A short-lived access token for the page to hold in memory, and the user it acts for. The refresh
 * token travels only in the httpOnly cookie, never in a body.
 */
export class DashboardSessionResponse extends AccessTokenResponse {
  @ApiProperty({ type: SessionUserResponse }) user: SessionUserResponse;
}
