import { Module } from '@nestjs/common';
import { IdentitiesController } from './identities.controller';
import { IdentitiesModule } from './identities.module';

/** The identities API (/v1/identities) over IdentitiesModule. */
@Module({
  imports: [IdentitiesModule],
  controllers: [IdentitiesController],
})
export class IdentitiesHttpModule {}
