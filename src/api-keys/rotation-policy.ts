import type { ApiKey } from './api-key.entity';
import type { CreateApiKeyDto } from './dto/api-key.dto';

const DAY_MS = 86_400_000;

/** When a key with a rotation policy of `days` rotates next, counted from `from`. */
export function nextRotationAfter(from: Date, days: number): Date {
  return new Date(from.getTime() + days * DAY_MS);
}

/** A key's rotation policy as a create or PATCH sets it; its next rotation counts from `now`. */
export function applyRotationPolicy(
  key: ApiKey,
  policy: CreateApiKeyDto['rotation_policy'],
  now: Date,
): void {
  key.rotationEnabled = policy?.enabled ?? false;
  key.rotationDays = policy?.days ?? null;
  key.rotationGraceSeconds = policy?.grace_period_seconds ?? 0;
  key.nextRotationAt =
    key.rotationEnabled && key.rotationDays ? nextRotationAfter(now, key.rotationDays) : null;
}
