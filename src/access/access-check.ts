import { ApiKeyGuard } from './guards/api-key.guard';
import { KeyThrottlerGuard } from './guards/key-throttler.guard';
import { RolesGuard } from './guards/roles.guard';

/** The key check's order and its engine live in key-check.ts (KeyCheck.run). */
export { ACCESS_STEPS, type AccessStepName } from './key-check';

/**
 * The design's three global guards, thin faces over the key check (KeyCheck.run), each running its share
 * of ACCESS_STEPS (its static `steps`) by name. Nest runs global guards in the order they are registered,
 * and AccessModule registers exactly this list; KeyCheck.runOf refuses at start a share that is not the
 * next slice of ACCESS_STEPS, and access-check.spec.ts / test/access-check.e2e-spec.ts check the order
 * run. POST /v1/keys/verify runs the same engine over all of ACCESS_STEPS (KeyVerificationService).
 */
export const GLOBAL_GUARDS = [ApiKeyGuard, RolesGuard, KeyThrottlerGuard] as const;
