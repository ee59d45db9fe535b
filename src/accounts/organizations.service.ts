import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { newId } from '../common/ids';
import { isUniqueViolation } from '../database/database-errors';
import { Organization } from './organization.entity';
import { PasswordHasher } from './password-hasher';
import { User } from './user.entity';
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
    @InjectRepository(Organization) private readonly organizations: Repository<Organization>,
    private readonly passwords: PasswordHasher,
  ) {}

  /** A new organization and its first administrator, in one transaction. */
  async createWithAdministrator(input: NewOrganization): Promise<{ organization: Organization; user: User }> {
    const passwordHash = await this.passwords.hash(input.password);
    try {
      return await this.organizations.manager.transaction((manager) =>
        this.insert(manager, input, passwordHash),
      );
    } catch (error) {
      if (isUniqueViolation(error, 'users_email_key')) throw emailTaken();
      throw error;
    }
  }

  /**
   * Creates the first organization and administrator when, and only when, no user exists yet. The
   * advisory lock makes simultaneous starts of several instances create it once.
   */
  /** Whether the installation has any user at all (the start banner says how to make the first). */
  hasAnyUser(): Promise<boolean> {
    return this.organizations.manager.exists(User);
  }

  async bootstrap(input: NewOrganization): Promise<User | undefined> {
    const passwordHash = await this.passwords.hash(input.password);
    return this.organizations.manager.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtext('gatehouse:bootstrap'))`);
      if (await manager.exists(User)) return undefined;
      return (await this.insert(manager, input, passwordHash)).user;
    });
  }

  private async insert(
    manager: EntityManager,
    input: NewOrganization,
    passwordHash: string,
  ): Promise<{ organization: Organization; user: User }> {
    const organization = await manager.save(
      manager.create(Organization, { id: newId('organization'), name: input.organizationName }),
    );
    const user = await manager.save(
      manager.create(User, {
        id: newId('user'),
        organizationId: organization.id,
        email: input.email.trim().toLowerCase(),
        name: input.name,
        role: 'administrator',
        passwordHash,
        active: true,
        deactivatedAt: null,
      }),
    );
    return { organization, user };
  }
}
