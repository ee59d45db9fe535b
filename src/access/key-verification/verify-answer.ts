import type { VerifyKeyCode, VerifyKeyResponse } from '../../api-keys/dto/verify-key.dto';
import { permissionList } from '../../roles/permissions';
import type { Principal } from '../principal';

/** POST /v1/keys/verify's answer about a key that resolved, valid or refused. */
export function namedAnswer(
  principal: Principal,
  valid: boolean,
  code: VerifyKeyCode,
  creditsRemaining: number | null,
): VerifyKeyResponse {
  const key = principal.key!;
  return {
    valid,
    code,
    key_id: key.id,
    name: key.name,
    identity: key.identity,
    permissions: permissionList(principal.permissions),
    meta: { ...key.meta },
    credits_remaining: creditsRemaining,
    expires_at: key.expiresAt?.toISOString() ?? null,
  };
}

/**
 * A valid answer's text before and after its one field that changes from call to call,
 * `credits_remaining`, made once per Principal (one per cached key record: a key that changes is a new
 * record). Serializing the whole answer was the largest single item of the route's CPU after reading the
 * body (a profile under load).
 */
const validAnswerParts = new WeakMap<Principal, { head: string; tail: string }>();

/** `JSON.stringify(namedAnswer(principal, true, 'valid', creditsRemaining))`, from the parts kept. */
export function validAnswerText(principal: Principal, creditsRemaining: number | null): string {
  let parts = validAnswerParts.get(principal);
  if (!parts) {
    // The fields in namedAnswer's order: those before credits_remaining, then expires_at after it.
    const { credits_remaining: _, expires_at, ...before } = namedAnswer(principal, true, 'valid', null);
    parts = {
      head: `${JSON.stringify(before).slice(0, -1)},"credits_remaining":`,
      tail: `,"expires_at":${JSON.stringify(expires_at)}}`,
    };
    validAnswerParts.set(principal, parts);
  }
  return `${parts.head}${creditsRemaining}${parts.tail}`;
}
