import { ConfigOf } from '../config/config-namespace';
import { accountsConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OrganizationsService } from './organizations.service';
import { PasswordHasher } from './password-hasher';
import { UsersService } from './users.service';

/**
 * BOOTSTRAP_ADMIN_EMAIL/PASSWORD: the first administrator of an empty installation. Idempotent. On an
 * installation that has users they change nothing; when they then differ from what exists (another
 * email, another password), one warning says so, since the person who set them expects to sign in with
 * them.
 */
@Injectable()
export class BootstrapAdmin implements OnApplicationBootstrap {
  private readonly logger = new Logger('Bootstrap');
  /** The bootstrap email when it signs in with the bootstrap password, as found at start. */
  private workingSignIn?: string;

  constructor(
    @Inject(accountsConfig.KEY) private readonly config: ConfigOf<typeof accountsConfig>,
    private readonly organizations: OrganizationsService,
    private readonly users: UsersService,
    private readonly passwords: PasswordHasher,
  ) {}

  /** The account the start banner may suggest: only one that exists, is active and has these credentials. */
  get signInAs(): string | undefined {
    return this.workingSignIn;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { email, password } = this.config.bootstrap;
    if (!email || !password) return;
    const created = await this.organizations.bootstrap({
      organizationName: this.config.bootstrap.organizationName,
      email,
      password,
      name: 'Administrator',
    });
    if (created) {
      this.logger.log(`created bootstrap administrator ${created.id} in ${created.organizationId}`);
      this.workingSignIn = created.email;
      return;
    }
    const notApplied = await this.whyNotApplied(email, password);
    if (notApplied) this.logger.warn(notApplied);
    else this.workingSignIn = email.trim().toLowerCase();
  }

  /** Why the settings do not sign anyone in on an installation that already had users; undefined if they do. */
  private async whyNotApplied(email: string, password: string): Promise<string | undefined> {
    const user = await this.users.findByEmail(email.trim().toLowerCase());
    if (!user) {
      return (
        `BOOTSTRAP_ADMIN_EMAIL is set but users already exist and none is ${email}; not applied ` +
        '(the bootstrap settings only create the first administrator of an empty installation)'
      );
    }
    if (!user.active) {
      return `BOOTSTRAP_ADMIN_EMAIL is set but ${user.email} is deactivated; not applied (activate it with POST /v1/users/${user.id}/activate)`;
    }
    if (!(await this.passwords.verify(password, user.passwordHash))) {
      return `BOOTSTRAP_ADMIN_PASSWORD is set but ${user.email} already has another password; not applied (change it with PATCH /v1/users/${user.id})`;
    }
    return undefined;
  }
}
