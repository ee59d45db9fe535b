import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { AccountsModule } from '../accounts/accounts.module';
import { RolesModule } from '../roles/roles.module';
import { Secrets } from '../secrets/secrets';
import { AccessTokenService } from './access-token.service';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { LoginAttemptLimiter } from './login-attempt-limiter';

/** Sign-in and access tokens. */
@Module({
  imports: [
    AccountsModule,
    RolesModule,
    JwtModule.registerAsync({
      inject: [Secrets],
      useFactory: (secrets: Secrets) => ({
        secret: secrets.tokenSigningSecret,
        signOptions: { algorithm: 'HS256' },
        verifyOptions: { algorithms: ['HS256'] },
      }),
    }),
  ],
  controllers: [AuthController],
  providers: [AuthService, AccessTokenService, LoginAttemptLimiter],
  exports: [AccessTokenService, AuthService],
})
export class AuthModule {}
