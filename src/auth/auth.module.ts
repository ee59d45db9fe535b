import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { createSecretKey } from 'node:crypto';
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
        // A KeyObject of the secret's bytes, made once: given a string, jsonwebtoken tries it as a public
        // key first, on every sign and verify, and that failed parse cost about 15% of the CPU of a
        // request carrying an access token (bench:tasks profile). Same key, same HS256 signatures.
        secret: createSecretKey(Buffer.from(secrets.tokenSigningSecret)),
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
