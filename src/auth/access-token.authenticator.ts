import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { User } from '../accounts/user.entity';
import { unauthorized } from '../common/problem';
import { RolesService } from '../roles/roles.service';
import { AccessTokenService } from './access-token.service';
import type { Principal } from './principal';

/**
 * Access token to Principal. The user row is read on every request (a primary-key lookup) so a
 * deactivation or a role change applies to the very next request.
 */
@Injectable()
export class AccessTokenAuthenticator {
  constructor(
    private readonly tokens: AccessTokenService,
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly roles: RolesService,
  ) {}

  async authenticate(token: string): Promise<Principal> {
    const claims = this.tokens.verify(token);
    const user = await this.users.findOneBy({ id: claims.sub, organizationId: claims.org });
    if (!user) throw unauthorized('invalid_credentials', 'The access token is not valid.');
    if (!user.active) throw unauthorized('user_deactivated', 'The user account is deactivated.');
    const permissions = await this.roles.permissionsOf(user.organizationId, user.role);
    return {
      kind: 'user',
      organizationId: user.organizationId,
      userId: user.id,
      apiKeyId: null,
      role: user.role,
      permissions: permissions ?? new Set(),
    };
  }
}
