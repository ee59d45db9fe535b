import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { GitHubPublicKeys } from './github-public-keys';
import { RevokeRateLimitGuard } from './revoke-rate-limit.guard';
import { SecretScanningController } from './secret-scanning.controller';
import { SecretScanningService } from './secret-scanning.service';

/**
 * Leak reports over HTTP (the API only): GitHub's secret-scanning partner endpoint and the public
 * revocation endpoint. What a report does to keys is the api-keys module's (KeyLeaks).
 */
@Module({
  imports: [ApiKeysModule],
  controllers: [SecretScanningController],
  providers: [SecretScanningService, GitHubPublicKeys, RevokeRateLimitGuard],
})
export class SecretScanningModule {}
