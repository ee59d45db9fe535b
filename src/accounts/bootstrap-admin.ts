import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { OrganizationsService } from './organizations.service';

/** BOOTSTRAP_ADMIN_EMAIL/PASSWORD: the first administrator of an empty installation. Idempotent. */
@Injectable()
export class BootstrapAdmin implements OnApplicationBootstrap {
  private readonly logger = new Logger('Bootstrap');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly organizations: OrganizationsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { BOOTSTRAP_ADMIN_EMAIL: email, BOOTSTRAP_ADMIN_PASSWORD: password } = this.config;
    if (!email || !password) return;
    const user = await this.organizations.bootstrap({
      organizationName: this.config.BOOTSTRAP_ORGANIZATION_NAME,
      email,
      password,
      name: 'Administrator',
    });
    if (user) this.logger.log(`created bootstrap administrator ${user.id} in ${user.organizationId}`);
  }
}
