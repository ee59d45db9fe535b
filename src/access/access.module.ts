import { Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { AccountsModule } from '../accounts/accounts.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AuditModule } from '../audit/audit.module';
import { AuthModule } from '../auth/auth.module';
import { MetricsModule } from '../metrics/metrics.module';
import { RateLimitsModule } from '../rate-limits/rate-limits.module';
import { RolesModule } from '../roles/roles.module';
import { SessionsModule } from '../sessions/sessions.module';
import { UsageModule } from '../usage/usage.module';
import { AccessPolicies } from './access-policy';
import { AccessTokenResolver } from './credentials/access-token.resolver';
import { ApiKeyResolver } from './credentials/api-key.resolver';
import { OAuthTokenResolver } from './credentials/oauth-token.resolver';
import { OAuthModule } from '../oauth/oauth.module';
import { TaskTokenResolver } from './credentials/task-token.resolver';
import { TaskTokensModule } from '../tasks/run-tokens/task-tokens.module';
import { KeyCache } from './credentials/key-cache';
import { KeysVerifyController } from './key-verification/keys-verify.controller';
import { KeyVerificationService } from './key-verification/key-verification.service';
import { DenialRecorder } from './denial-recorder';
import { KeyCheck } from './key-check';
import { RoutePermissionsCheck } from './route-permissions.check';
import { ConcurrencyStep } from './steps/concurrency.step';
import { CredentialStep } from './steps/credential.step';
import { CreditsStep } from './steps/credits.step';
import { PermissionStep } from './steps/permission.step';
import { RateLimitStep } from './steps/rate-limit.step';
import { RestrictionsStep } from './steps/restrictions.step';
import { ApiKeyGuard } from './guards/api-key.guard';
import { KeyThrottlerGuard } from './guards/key-throttler.guard';
import { RolesGuard } from './guards/roles.guard';

/**
 * The design's three global guards, each a thin face over one part of the key check (KeyCheck.identify,
 * authorize, meter). Nest runs global guards in the order they are registered, and this module registers
 * exactly this list, so together they run the check top to bottom (test/access-check.e2e-spec.ts records
 * the order a real request runs).
 */
export const GLOBAL_GUARDS = [ApiKeyGuard, RolesGuard, KeyThrottlerGuard] as const;

/**
 * The key check (KeyCheck, key-check.ts): its steps, the credential resolvers behind the first one, the
 * one denial path, and its faces: the global guards, registered in GLOBAL_GUARDS's order, and POST
 * /v1/keys/verify.
 */
@Module({
  imports: [
    DiscoveryModule,
    AccountsModule,
    ApiKeysModule,
    AuthModule,
    RolesModule,
    SessionsModule,
    AuditModule,
    MetricsModule,
    RateLimitsModule,
    UsageModule,
    TaskTokensModule,
    OAuthModule,
  ],
  controllers: [KeysVerifyController],
  providers: [
    KeyCache,
    KeyVerificationService,
    ApiKeyResolver,
    AccessTokenResolver,
    TaskTokenResolver,
    OAuthTokenResolver,
    CredentialStep,
    RestrictionsStep,
    PermissionStep,
    AccessPolicies,
    RateLimitStep,
    CreditsStep,
    ConcurrencyStep,
    KeyCheck,
    DenialRecorder,
    RoutePermissionsCheck,
    ...GLOBAL_GUARDS,
    ...GLOBAL_GUARDS.map((guard) => ({ provide: APP_GUARD, useExisting: guard })),
  ],
})
export class AccessModule {}
