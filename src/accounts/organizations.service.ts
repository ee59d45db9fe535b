import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../common/ids';
import { ORGANIZATION_ID, USER_ID } from './accounts.declarations';
import { isUniqueViolation } from '../database/database-errors';
import { Organization } from './organization.entity';
import { OrganizationsRepository } from './organizations.repository';
import { PasswordHasher } from './password-hasher';
import { User } from './user.entity';
import { UsersRepository } from './users.repository';
import { emailTaken } from './users.service';

export interface NewOrganization {
  organizationName: string;
  email: string;
  password: string;
  name: string;
}

@Injectable()
export class OrganizationsService {
  constructor(
    private readonly organizations: OrganizationsRepository,
    private readonly users: UsersRepository,
    private readonly passwords: PasswordHasher,
  ) {}

  /** A new organization and its first administrator, in one transaction. */
  async createWithAdministrator(input: NewOrganization): Promise<{ organization: Organization; user: User }> {
    const passwordHash = await this.passwords.hash(input.password);
    try {
      return await this.organizations.transaction((manager) => this.insert(manager, input, passwordHash));
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) throw emailTaken();
      throw error;
    }
  }

  /** An organization's name, as other modules show it (the OAuth consent page); undefined for an unknown id. */
  nameOf(id: string): Promise<string | undefined> {
    return this.organizations.nameOf(id);
  }

  /** Whether the installation has any user at all (the start banner says how to make the first). */
  hasAnyUser(): Promise<boolean> {
    return this.users.anyExists();
  }

  /**
   * Creates the first organization and administrator when, and only when, no user exists yet. The
   * advisory lock makes simultaneous starts of several instances create it once.
   */
  async bootstrap(input: NewOrganization): Promise<User | undefined> {
    const passwordHash = await this.passwords.hash(input.password);
    return this.organizations.transaction(async (manager) => {
      await this.organizations.lockBootstrap(manager);
      if (await this.users.anyExists(manager)) return undefined;
      return (await this.insert(manager, input, passwordHash)).user;
    });
  }

  private async insert(
    manager: EntityManager,
    input: NewOrganization,
    passwordHash: string,
  ): Promise<{ organization: Organization; user: User }> {
    const organization = await this.organizations.insert(manager, {
      id: newId(ORGANIZATION_ID),
      name: input.organizationName,
    });
    const user = await this.users.save(
      this.users.newUser({
        id: newId(USER_ID),
        organizationId: organization.id,
        email: input.email.trim().toLowerCase(),
        name: input.name,
        role: 'administrator',
        passwordHash,
        active: true,
        deactivatedAt: null,
      }),
      manager,
    );
    return { organization, user };
  }
}
