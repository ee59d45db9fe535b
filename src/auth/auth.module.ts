import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { RolesModule } from '../roles/roles.module';
import { AccessTokenAuthenticator } from './access-token.authenticator';
import { AccessTokenService } from './access-token.service';
import { ApiKeyGuard } from './api-key.guard';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { LoginAttemptLimiter } from './login-attempt-limiter';

/** Sign-in, access tokens and the credential-resolving guard. */
@Module({
  imports: [AccountsModule, RolesModule, ApiKeysModule],
  controllers: [AuthController],
  providers: [AuthService, AccessTokenService, AccessTokenAuthenticator, LoginAttemptLimiter, ApiKeyGuard],
  exports: [ApiKeyGuard, AccessTokenService],
})
export class AuthModule {}
