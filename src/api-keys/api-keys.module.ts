import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { RolesModule } from '../roles/roles.module';
import { ApiKey } from './api-key.entity';
import { ApiKeyValues } from './api-key-format';
import { ApiKeysRepository } from './api-keys.repository';
import { KeyPermissions } from './key-permissions';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { KeyChangeRecorder } from './key-change-recorder';
import { KeyExpiryJob } from './key-expiry.job';
import { KeyRotationJob } from './key-rotation.job';
import { KeyUsageRecorder } from './key-usage-recorder';
import { VerifyController } from './verify.controller';

/** API keys: lifecycle endpoints, verification, key values and their last use. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKey]), AccountsModule, RolesModule],
  controllers: [VerifyController, ApiKeysController],
  providers: [
    ApiKeysService,
    ApiKeyValues,
    ApiKeysRepository,
    KeyPermissions,
    KeyUsageRecorder,
    KeyChangeRecorder,
    KeyExpiryJob,
    KeyRotationJob,
  ],
  exports: [ApiKeyValues, ApiKeysService, ApiKeysRepository, KeyPermissions, KeyUsageRecorder],
})
export class ApiKeysModule {}
