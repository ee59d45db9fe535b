import { Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { UsageController } from './usage.controller';
import { UsageModule } from './usage.module';
import { UsageService } from './usage.service';

/** The usage API (/v1/api-keys/{id}/usage, /v1/usage) over UsageModule. */
@Module({
  imports: [UsageModule, ApiKeysModule],
  controllers: [UsageController],
  providers: [UsageService],
})
export class UsageHttpModule {}
