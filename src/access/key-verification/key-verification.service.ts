import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { ApiKeyError, ApiKeyErrorCode } from '../../api-keys/api-keys.errors';
import { CreditsService } from '../../api-keys/credits/credits.service';
import { KeyLookup } from '../../api-keys/key-lookup';
import type { VerifyKeyCode, VerifyKeyDto, VerifyKeyResponse } from '../../api-keys/dto/verify-key.dto';
import {
  parsePermissionQuery,
  PermissionQuery,
  PermissionQueryError,
  satisfies,
} from '../../api-keys/verification/permission-query';
import { UsageCounter } from '../../usage/usage-counter';
import { USAGE_MEASURES } from '../../usage/usage-measures';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import { ApiKeyResolver } from '../credentials/api-key.resolver';
import { DenialRecorder } from '../denial-recorder';
import type { Principal } from '../principal';
import { RateLimitStep } from '../steps/rate-limit.step';
import { RestrictionsStep } from '../steps/restrictions.step';
import { balancesOf, creditsExhausted } from '../steps/credits.step';
import { namedAnswer, validAnswerText } from './verify-answer';

const DEFAULT_COST = 1;

/** Why a verified key is refused, or what a valid verify left of its balance. */
type KeyOutcome = { denial: AccessDenial } | { denial: null; creditsRemaining: number | null; spent: number };

/**
 * POST /v1/keys/verify: a key value another service of the caller's organization was presented, put
 * through the same rules as the key check, in the same order, with the same code for each refusal
 * (CONTRACT, "Verifying keys for other services"): the credential (shape, lookup, status), the
 * restrictions against the address and referrer the service reports, the permission query, one request
 * of the key's rate-limit windows, then `cost` credits at once. Every outcome is an answer, not an
 * error; only a malformed query is the caller's mistake.
 */
@Injectable()
export class KeyVerificationService {
  constructor(
    private readonly resolver: ApiKeyResolver,
    private readonly restrictions: RestrictionsStep,
    private readonly rateLimits: RateLimitStep,
    private readonly credits: CreditsService,
    private readonly keys: KeyLookup,
    private readonly usage: UsageCounter,
    private readonly denials: DenialRecorder,
  ) {}

  /**
   * The answer, as the JSON text of a VerifyKeyResponse. `connection`: the calling service's socket (see
   * ApiKeyResolver.resolveForOrganization).
   */
  async verify(caller: Principal, body: VerifyKeyDto, connection: object): Promise<string> {
    // The query first: a malformed one is answered 400 whatever the key, and spends nothing.
    const query = body.permissions === undefined ? null : parseQuery(body.permissions);
    const { principal, denial } = await this.resolver.resolveForOrganization(
      caller.organizationId,
      body.key,
      body.ip ?? null,
      connection,
    );
    if (!principal) {
      return JSON.stringify(unnamedAnswer(denial ? (denial.code as VerifyKeyCode) : 'invalid_credentials'));
    }

    const outcome: KeyOutcome = denial
      ? { denial }
      : await this.check(principal, query, body.cost ?? DEFAULT_COST, body);
    const key = principal.key!;
    // Counted in the verified key's usage as a request of it would be: its outcome, and what it spent;
    // a refusal is audited as the key check audits one (key.denied, coalesced per key and reason).
    if (outcome.denial) {
      this.denials.refusedVerification(
        { organizationId: principal.organizationId, id: key.id, identity: key.identity },
        outcome.denial,
        { ip: body.ip ?? null, userAgent: null },
        caller.apiKeyId ?? caller.userId,
      );
      const code = outcome.denial.code as VerifyKeyCode;
      return JSON.stringify(namedAnswer(principal, false, code, await this.balanceOf(principal)));
    }
    this.usage.count(principal.organizationId, key, 'allowed');
    if (outcome.spent)
      this.usage.count(principal.organizationId, key, USAGE_MEASURES.creditsSpent, outcome.spent);
    const creditsRemaining =
      outcome.creditsRemaining !== null ? outcome.creditsRemaining : await this.balanceOf(principal);
    return validAnswerText(principal, creditsRemaining);
  }

  /** The key check's later steps for a key that resolved: restrictions, permission, rate limit, credits. */
  private async check(
    principal: Principal,
    query: PermissionQuery | null,
    cost: number,
    body: VerifyKeyDto,
  ): Promise<KeyOutcome> {
    const key = principal.key!;
    const restricted = this.restrictions.refusalOf(key, body.ip, body.referrer);
    if (restricted) return { denial: restricted };
    if (query && !satisfies(query, principal.permissions)) {
      return {
        denial: new AccessDenial(
          AccessDenialCode.Forbidden,
          'The key does not satisfy the permission query.',
        ),
      };
    }
    const balances = balancesOf(key);
    const spends = balances.length > 0 && cost > 0;
    // The cost rides in the windows' Redis run when it can: one round trip for the verified key's
    // windows and balances (CreditsService.rideFor); spent only if every window lets it through.
    const ride = spends
      ? this.credits.rideFor(
          balances.map(({ holder }) => holder),
          cost,
        )
      : null;
    const limited = await this.rateLimits.countFor(principal, ride?.window);
    if (limited) return { denial: limited };
    if (!spends) return { denial: null, creditsRemaining: null, spent: 0 };
    const settled = ride && this.credits.settleRide(ride);
    if (settled?.spent) return { denial: null, creditsRemaining: settled.remaining, spent: cost };
    if (settled)
      return { denial: creditsExhausted(balances[settled.short].scope, { retryAfterSeconds: null }) };
    // The key's balance and its identity's at once (one round trip), all of `cost` from each or none.
    const spent = await Promise.all(balances.map(({ holder }) => this.credits.spendAtOnce(holder, cost)));
    const short = spent.findIndex((outcome) => outcome === null);
    if (short >= 0) {
      await Promise.all(
        spent.map((outcome) => outcome && this.credits.releaseReserved(outcome.account, cost)),
      );
      const denial = creditsExhausted(balances[short].scope, { retryAfterSeconds: null });
      return { denial };
    }
    return { denial: null, creditsRemaining: spent[0]!.remaining, spent: cost };
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
