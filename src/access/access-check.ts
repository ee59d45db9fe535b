import { ApiKeyGuard } from './guards/api-key.guard';
import { KeyThrottlerGuard } from './guards/key-throttler.guard';
import { RolesGuard } from './guards/roles.guard';

/**
 * The key check, top to bottom. Every request to a route not marked `@Public()` goes through these
 * steps in this order; the first refusal ends it (and is recorded by DenialRecorder, and answered as
 * DENIAL_RESPONSES says), so a request refused early spends nothing later steps count.
 *
 *   1. credential    steps/credential.step.ts    exactly one access token or API key -> request.principal
 *   2. restrictions  steps/restrictions.step.ts  the key's allowed_ips and allowed_referrers
 *   3. permission    steps/permission.step.ts    the route's @RequirePermissions against the principal
 *   3b. policies     access-policy.ts            extensions' @AccessPolicy() steps, in module order
 *   4. rate limit    @nestjs/throttler           per key, per minute and per hour (rate-limits.module.ts)
 *   5. credits       steps/credits.step.ts       one credit of a key with a balance (api-keys/credits)
 *   6. concurrency   steps/concurrency.step.ts   requests of one key in flight
 */
export const ACCESS_STEPS = [
  'credential',
  'restrictions',
  'permission',
  'policies',
  'rate_limit',
  'credits',
  'concurrency',
] as const;

/**
 * The design's three global guards, thin faces over the steps, each running its share in order. Nest
 * runs global guards in the order they are registered, and AccessModule registers exactly this list,
 * so this is the one place the order is declared (access-check.spec.ts fails if the two disagree).
 */
export const GLOBAL_GUARDS = [ApiKeyGuard, RolesGuard, KeyThrottlerGuard] as const;
