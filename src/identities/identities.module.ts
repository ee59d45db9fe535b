import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentitiesRepository } from './identities.repository';
import { IdentitiesService } from './identities.service';
import { IdentityBalances } from './identity-balances';
import { IdentityKeys } from './identity-keys';
import { Identity } from './identity.entity';

/** Identities, the customers behind keys (the api-keys module, above it, attaches keys to them). */
@Module({
  imports: [TypeOrmModule.forFeature([Identity])],
  providers: [IdentitiesRepository, IdentitiesService, IdentityKeys, IdentityBalances],
  exports: [IdentitiesService, IdentityKeys, IdentityBalances],
})
export class IdentitiesModule {}
