import { ApiKeyGuard } from './guards/api-key.guard';
import { KeyThrottlerGuard } from './guards/key-throttler.guard';
import { RolesGuard } from './guards/roles.guard';

/**
 * The key check, top to bottom. Every request to a route not marked `@Public()` goes through these
 * steps in this order; the first refusal ends it (earlier steps' `undo` runs, it is recorded by
 * DenialRecorder, and answered as DENIAL_RESPONSES says), so a request refused early spends nothing
 * later steps count. AccessModule maps each name to its step (AccessSteps, access-steps.ts).
 *
 *   1. credential    steps/credential.step.ts    exactly one access token or API key -> request.principal
 *   2. restrictions  steps/restrictions.step.ts  the key's allowed_ips and allowed_referrers
 *   3. permission    steps/permission.step.ts    the route's @RequirePermissions against the principal
 *   3b. policies     access-policy.ts            extensions' @AccessPolicy({ order }) steps, by order then name
 *   4. rate limit    steps/rate-limit.step.ts    @nestjs/throttler's windows per key (rate-limits.module.ts)
 *   5. credits       steps/credits.step.ts       one credit of a key with a balance; undone if refused later
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

export type AccessStepName = (typeof ACCESS_STEPS)[number];

/**
 * The design's three global guards, thin faces over the steps, each running its share of ACCESS_STEPS
 * (its static `steps`) by name. Nest runs global guards in the order they are registered, and
 * AccessModule registers exactly this list; AccessSteps refuses at start a share that is not the next
 * slice of ACCESS_STEPS, and access-check.spec.ts / test/access-check.e2e-spec.ts check the order run.
 */
export const GLOBAL_GUARDS = [ApiKeyGuard, RolesGuard, KeyThrottlerGuard] as const;
