import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Organization } from '../accounts/organization.entity';
import { IdentitiesRepository } from './identities.repository';
import { IdentitiesService } from './identities.service';
import { IdentityBalances } from './identity-balances';
import { IdentityKeys } from './identity-keys';
import { Identity } from './identity.entity';

/** Identities, the customers behind keys (the api-keys module, above it, attaches keys to them). */
@Module({
  // Organization too: identities.organization_id's foreign key names it, and TypeORM builds a foreign key
  // only to an entity of the same data source (this module does not import AccountsModule).
  imports: [TypeOrmModule.forFeature([Identity, Organization])],
  providers: [IdentitiesRepository, IdentitiesService, IdentityKeys, IdentityBalances],
  exports: [IdentitiesService, IdentityKeys, IdentityBalances],
})
export class IdentitiesModule {}
