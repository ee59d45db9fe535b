import { ConfigOf } from '../config/config-namespace';
import { accountsConfig } from '../config/namespaces';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OrganizationsService } from './organizations.service';

/** BOOTSTRAP_ADMIN_EMAIL/PASSWORD: the first administrator of an empty installation. Idempotent. */
@Injectable()
export class BootstrapAdmin implements OnApplicationBootstrap {
  private readonly logger = new Logger('Bootstrap');

  constructor(
    @Inject(accountsConfig.KEY) private readonly config: ConfigOf<typeof accountsConfig>,
    private readonly organizations: OrganizationsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { email, password } = this.config.bootstrap;
    if (!email || !password) return;
    const user = await this.organizations.bootstrap({
      organizationName: this.config.bootstrap.organizationName,
      email,
      password,
      name: 'Administrator',
    });
    if (user) this.logger.log(`created bootstrap administrator ${user.id} in ${user.organizationId}`);
  }
}
