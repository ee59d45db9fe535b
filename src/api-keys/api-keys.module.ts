import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { RolesModule } from '../roles/roles.module';
import { ApiKey } from './api-key.entity';
import { ApiKeyAuthenticator } from './api-key.authenticator';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { KeyCache } from './key-cache';
import { KeyChangeRecorder } from './key-change-recorder';
import { KeyExpiryJob } from './key-expiry.job';
import { KeyRotationJob } from './key-rotation.job';
import { KeyUsageRecorder } from './key-usage-recorder';
import { VerifyController } from './verify.controller';

/** API keys: lifecycle endpoints, verification, and the authenticator ApiKeyGuard delegates to. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AccountsModule, RolesModule],
  controllers: [ApiKeysController, VerifyController],
  providers: [
    ApiKeysService,
    ApiKeyAuthenticator,
    KeyCache,
    KeyUsageRecorder,
    KeyChangeRecorder,
    KeyExpiryJob,
    KeyRotationJob,
  ],
  exports: [ApiKeyAuthenticator, ApiKeysService],
})
export class ApiKeysModule {}
