import { isDeepStrictEqual } from 'node:util';
import { ApiKey } from './api-key.entity';
import { ApiKeyResponse } from './dto/api-key-response.dto';

/** One setting before and after an update, as the key object shows it. */
export interface SettingChange {
  from: unknown;
  to: unknown;
}

/**
 * The settings a PATCH may change whose values a `key.updated` entry records, as the key object names
 * and shows them. `credits` is left out: a balance moves with every request, so its "before" would be
 * stale by the time anyone reads it; the entry still names the field.
 */
const RECORDED = [
  'name',
  'description',
  'role',
  'team_id',
  'expiration',
  'rotation_policy',
  'rate_limit',
  'allowed_referrers',
  'allowed_ips',
  'hide_credentials',
  'meta',
] as const;

/** A key's recorded settings, read before an update changes the entity in place, and after it. */
export function recordedSettings(key: ApiKey): Record<string, unknown> {
  const shown = ApiKeyResponse.of(key, []);
  return {
    ...Object.fromEntries(RECORDED.map((field) => [field, shown[field]])),
    identity_id: key.identityId ?? null,
  };
}

/** `{<field>: {from, to}}` for each of `fields` whose recorded value the update changed. */
export function settingChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  fields: string[],
): Record<string, SettingChange> {
  return Object.fromEntries(
    fields
      .filter((field) => field in before && !isDeepStrictEqual(before[field], after[field]))
      .map((field) => [field, { from: before[field], to: after[field] }]),
  );
}
