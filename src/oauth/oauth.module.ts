import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { RolesModule } from '../roles/roles.module';
import './oauth.declarations';
import { OAuthGrant } from './oauth-grant.entity';
import { OAuthGrants } from './oauth-grants';
import { OAuthInteractions } from './oauth-interactions';
import { OAuthTokensController } from './oauth-tokens.controller';
import { OAuthRecord } from './oauth-record.entity';
import { OAuthRecordsRepository } from './oauth-records.repository';
import { OAuthRecordsSweepJob } from './oauth-records-sweep.job';
import { OAuthRoutes } from './oauth-routes';
import { OAuthServer } from './oauth-server';
import { OAuthTokens } from './oauth-tokens';

/**
 * The OAuth 2.1 authorization server (the API only): oidc-provider under /oauth (OAuthServer), the
 * discovery documents, the sign-in and consent pages and introspection. Other modules inject
 * OAuthTokens (an access token to what it stands for: the access layer's) and OAuthGrants (listing and
 * revoking an organization's grants).
 */
@Module({
  imports: [TypeOrmModule.forFeature([OAuthRecord, OAuthGrant]), AuthModule, AccountsModule, RolesModule],
  controllers: [OAuthTokensController],
  providers: [
    OAuthRecordsRepository,
    OAuthServer,
    OAuthInteractions,
    OAuthRoutes,
    OAuthTokens,
    OAuthGrants,
    OAuthRecordsSweepJob,
  ],
  exports: [OAuthTokens, OAuthGrants],
})
export class OAuthModule {}
