import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { IdentitiesModule } from '../identities/identities.module';
import { OAuthModule } from '../oauth/oauth.module';
import { UsageController } from './usage.controller';
import { UsageModule } from './usage.module';
import { UsageService } from './usage.service';

/**
 * The usage API (/v1/api-keys/{id}/usage, /v1/identities/{id}/usage, /v1/oauth/grants/{id}/usage,
 * /v1/usage) over UsageModule.
 */
@Module({
  imports: [UsageModule, ApiKeysModule, IdentitiesModule, OAuthModule],
  controllers: [UsageController],
  providers: [UsageService],
})
export class UsageHttpModule {}
