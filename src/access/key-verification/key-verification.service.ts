import { Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { LRUCache } from 'lru-cache';
import { ApiKeyError, ApiKeyErrorCode } from '../../api-keys/api-keys.errors';
import { CreditsService } from '../../api-keys/credits/credits.service';
import { KeyLookup } from '../../api-keys/key-lookup';
import type { VerifyKeyCode, VerifyKeyDto, VerifyKeyResponse } from '../../api-keys/dto/verify-key.dto';
import {
  parsePermissionQuery,
  PermissionQuery,
  PermissionQueryError,
} from '../../api-keys/verification/permission-query';
import { UsageCounter } from '../../usage/usage-counter';
import { USAGE_MEASURES } from '../../usage/usage-measures';
import { DenialRecorder } from '../denial-recorder';
import { KeyCheck } from '../key-check';
import type { Principal } from '../principal';
import { balancesOf } from '../steps/credits.step';
import { verificationAttempt } from './verification-attempt';
import { namedAnswer, validAnswerText } from './verify-answer';

const DEFAULT_COST = 1;

/**
 * POST /v1/keys/verify: a key value another service of the caller's organization was presented, put
 * through the key check itself (KeyCheck.whole: every step and every access policy), with
 * the same code for each refusal (CONTRACT, "Verifying keys for other services"). What the steps check is
 * the request the service describes (verificationAttempt): the credential (shape, lookup, status), the
 * restrictions against the address and referrer it reports, its permission query for the route's
 * permission, the policies, one request of the key's rate-limit windows, `cost` credits at once, and a
 * slot of the key's requests in flight while the verify call lasts. Every outcome is an answer, not an
 * error; only a malformed query is the caller's mistake.
 */
@Injectable()
export class KeyVerificationService {
  constructor(
    private readonly check: KeyCheck,
    private readonly credits: CreditsService,
    private readonly keys: KeyLookup,
    private readonly usage: UsageCounter,
    private readonly denials: DenialRecorder,
  ) {}

  /**
   * The answer, as the JSON text of a VerifyKeyResponse. `response`: the verify call's (the verified key
   * holds a slot in flight until it closes); `connection`: the calling service's socket (see
   * ApiKeyResolver.resolveForOrganization).
   */
  async verify(
    caller: Principal,
    body: VerifyKeyDto,
    response: Response,
    connection: object,
  ): Promise<string> {
    // The query first: a malformed one is answered 400 whatever the key, and spends nothing.
    const permissions = body.permissions === undefined ? null : parseQuery(body.permissions);
    const cost = body.cost ?? DEFAULT_COST;
    const attempt = verificationAttempt(caller, body, permissions, cost, response, connection);
    // A refusal is an answer (`valid: false` and its code), not an error; a step that fails is thrown as it
    // is (the caller's 5xx).
    const denial = await this.check.whole(attempt);
    const principal = attempt.request.principal ?? attempt.verification!.named;
    if (!principal)
      return JSON.stringify(unnamedAnswer((denial?.code ?? 'invalid_credentials') as VerifyKeyCode));

    const key = principal.key!;
    // Counted in the verified key's usage as a request of it would be: its outcome, and what it spent;
    // a refusal is audited as the key check audits one (key.denied, coalesced per key and reason).
    if (denial) {
      this.denials.refusedVerification(
        { organizationId: principal.organizationId, id: key.id, identity: key.identity },
        denial,
        { ip: body.ip ?? null, userAgent: null },
        caller.apiKeyId ?? caller.userId,
      );
      const code = denial.code as VerifyKeyCode;
      return JSON.stringify(namedAnswer(principal, false, code, await this.balanceOf(principal)));
    }
    this.usage.count(principal.organizationId, key, 'allowed');
    const spent = attempt.request.creditSpent ? cost : 0;
    if (spent) this.usage.count(principal.organizationId, key, USAGE_MEASURES.creditsSpent, spent);
    const creditsRemaining = attempt.request.creditsRemaining ?? (await this.balanceOf(principal));
    return validAnswerText(principal, creditsRemaining);
  }

  /**
   * The live balance the answer shows: the key's when it has credits, else its identity's, else null.
   * The cached record's balance is the one it was loaded with, so the row is read again (only when no
   * spend just answered it).
   */
  private async balanceOf(principal: Principal): Promise<number | null> {
    const [first] = balancesOf(principal.key!);
    if (!first) return null;
    const found = await this.keys.byId(principal.organizationId, principal.key!.id);
    const row = first.scope === 'key' ? found?.key : found?.identityControls?.credits;
    if (!row || row.creditsRemaining === null) return null;
    return (await this.credits.balances([row])).get(row.id) ?? null;
  }
}

/**
 * Parsed queries by text: a service sends the same few queries thousands of times a second, and a parse
 * is a tokenizer and a parser's allocations each time. Bounded; a malformed query is not kept.
 */
const parsedQueries = new LRUCache<string, PermissionQuery>({ max: 1000 });

function parseQuery(text: string): PermissionQuery {
  const known = parsedQueries.get(text);
  if (known) return known;
  try {
    const query = parsePermissionQuery(text);
    parsedQueries.set(text, query);
    return query;
  } catch (error) {
    if (!(error instanceof PermissionQueryError)) throw error;
    throw new ApiKeyError(
      ApiKeyErrorCode.InvalidPermissionQuery,
      `Invalid permission query: ${error.message}.`,
      {
        errors: [{ field: 'permissions', message: error.message }],
      },
    );
  }
}

/** An answer that names no key: a malformed value, an unknown one, a deleted key, another organization's. */
function unnamedAnswer(code: VerifyKeyCode): VerifyKeyResponse {
  return {
    valid: false,
    code,
    key_id: null,
    name: null,
    identity: null,
    permissions: [],
    meta: null,
    credits_remaining: null,
    expires_at: null,
  };
}
