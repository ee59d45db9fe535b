import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { CreditAccount } from '../../api-keys/credits/credit-ledger';
import {
  CreditHolder,
  CreditsRide,
  CreditsService,
  RideSpendOutcome,
  SpendOutcome,
} from '../../api-keys/credits/credits.service';
import type { WindowRide } from '../../rate-limits/window-counter';
import type { AccessAttempt, AccessStep, KeyVerification, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';
import type { KeyContext } from '../principal';

declare module 'http' {
  interface IncomingMessage {
    /**
     * Set by the credits step: the balance after this request's credit (verify shows it), the key's when
     * it has credits, else its identity's.
     */
    creditsRemaining?: number;
    /**
     * Set by the credits step: where this request's credits came from (the key's balance, the identity's
     * or both), so that a refusal after the key check (a task whose max_credits a balance cannot cover)
     * can give them back.
     */
    creditSpent?: CreditAccount[];
    /**
     * Set by the credits step when the rate-limit step carries the request's credits in its windows'
     * Redis run (`rideOf`): what the step then settles instead of spending.
     */
    creditRide?: CreditsRide;
  }
}

/** Which balance refused a request: the problem's `scope` (CONTRACT, "Identities"). */
export type CreditScope = 'key' | 'identity';

/** A holder's balance that a request spends, and whose it is. */
export interface ScopedBalance {
  scope: CreditScope;
  holder: CreditHolder;
}

/** The balances a key's requests spend: its own when it has credits, its identity's when that has some. */
export function balancesOf(key: KeyContext): ScopedBalance[] {
  const balances: ScopedBalance[] = [];
  if (key.credits) balances.push({ scope: 'key', holder: key.credits });
  const shared = key.identityControls?.credits;
  if (shared) balances.push({ scope: 'identity', holder: shared });
  return balances;
}

/** Whether requests with `key` spend credits: the key or its identity has a balance. */
function spendsCredits(key: KeyContext | undefined): key is KeyContext {
  return key !== undefined && (Boolean(key.credits) || Boolean(key.identityControls?.credits));
}

/** Credits the attempt spends: a request one, a verification its `cost` (0: none). */
function costOf(verification: KeyVerification | undefined): number {
  return verification ? verification.cost : 1;
}

/**
 * Step 5, credits: a request that passed credential, restrictions, permission, policies and rate limit
 * spends one credit of the key's balance and one of its identity's (each when it has one); when either
 * is short it is refused (429 `credits_exhausted`, `scope` naming which, Retry-After up to its next
 * refill) and spends from neither. With Redis, the spend usually rides in the rate-limit step's script
 * (`rideOf`), all balances or none, so this step only settles what it spent; otherwise both are spent at
 * once (one turn of the event loop, one round trip), and a balance that granted while the other refused
 * gets its credit back. Keys with neither (the default) pass without a lookup or a turn of the event
 * loop. A later step's refusal gives the credits back (`giveBack`, KeyCheck.meter). A verification spends its `cost` of
 * each balance instead of one, all or none.
 */
@Injectable()
export class CreditsStep implements AccessStep {
  constructor(private readonly credits: CreditsService) {}

  check({ request, verification }: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    const key = request.principal?.key;
    if (!spendsCredits(key) || verification?.cost === 0) return undefined;
    const balances = balancesOf(key);
    const ride = request.creditRide;
    if (ride) {
      request.creditRide = undefined;
      const settled = this.credits.settleRide(ride);
      if (settled) return this.settle(request, balances, settled);
    }
    return verification
      ? this.spendAtOnce(request, balances, verification.cost)
      : this.spend(request, balances);
  }

  /**
   * The request's credits, prepared to be spent in the Redis run that counts its rate-limit windows
   * (RateLimitStep carries what this returns, so a request's windows and balances take one round trip);
   * undefined when the key spends none or they cannot ride (CreditsService.rideFor). The run spends them
   * only if every window lets the request through; `check` then settles what it spent, and spends the
   * usual way when the run did not (Redis failed, or held another copy of a balance).
   */
  rideOf(request: Request, verification?: KeyVerification): WindowRide | undefined {
    const key = request.principal?.key;
    const cost = costOf(verification);
    if (!spendsCredits(key) || cost === 0) return undefined;
    const ride = this.credits.rideFor(
      balancesOf(key).map(({ holder }) => holder),
      cost,
    );
    if (!ride) return undefined;
    request.creditRide = ride;
    return ride.window;
  }

  /** The Lua of the ride (undefined: credits cannot ride, their ledger is not Redis's). */
  get riderLua(): string | undefined {
    return this.credits.riderLua;
  }

  private settle(request: Request, balances: ScopedBalance[], outcome: RideSpendOutcome): StepOutcome {
    if (!outcome.spent) return creditsExhausted(balances[outcome.short].scope, outcome);
    request.creditsRemaining = outcome.remaining;
    request.creditSpent = outcome.accounts;
    return undefined;
  }

  private async spend(request: Request, balances: ScopedBalance[]): Promise<StepOutcome> {
    const outcomes = await Promise.all(balances.map(({ holder }) => this.credits.spend(holder)));
    const refused = outcomes.findIndex((outcome) => !outcome.spent);
    if (refused >= 0) {
      await this.refundSpent(outcomes);
      return creditsExhausted(
        balances[refused].scope,
        outcomes[refused] as { retryAfterSeconds: number | null },
      );
    }
    const spent = outcomes as Extract<SpendOutcome, { spent: true }>[];
    request.creditsRemaining = spent[0].remaining;
    request.creditSpent = spent.map((outcome) => outcome.account);
    return undefined;
  }

  /**
   * A verified key's `cost` from each balance at once, all or none (CONTRACT, "Verifying keys for other
   * services"); a balance that granted while another refused gets its credits back.
   */
  private async spendAtOnce(request: Request, balances: ScopedBalance[], cost: number): Promise<StepOutcome> {
    const spent = await Promise.all(balances.map(({ holder }) => this.credits.spendAtOnce(holder, cost)));
    const short = spent.findIndex((outcome) => outcome === null);
    if (short >= 0) {
      await Promise.all(
        spent.map((outcome) => outcome && this.credits.releaseReserved(outcome.account, cost)),
      );
      return creditsExhausted(balances[short].scope, { retryAfterSeconds: null });
    }
    request.creditsRemaining = spent[0]!.remaining;
    request.creditSpent = spent.map((outcome) => outcome!.account);
    return undefined;
  }

  /**
   * A later step refused the request (or failed): it spends nothing, so its credits go back. Does nothing
   * for a request this step did not charge.
   */
  async giveBack({ request, verification }: AccessAttempt): Promise<void> {
    const accounts = request.creditSpent;
    if (!accounts) return;
    delete request.creditSpent;
    delete request.creditsRemaining;
    const cost = costOf(verification);
    await Promise.all(
      accounts.map((account) =>
        cost === 1 ? this.credits.refund(account) : this.credits.releaseReserved(account, cost),
      ),
    );
  }

  private async refundSpent(outcomes: SpendOutcome[]): Promise<void> {
    await Promise.all(
      outcomes.map((outcome) => (outcome.spent ? this.credits.refund(outcome.account) : undefined)),
    );
  }
}

/** The refusal of a request (or a verified key's cost) that a balance cannot cover. */
export function creditsExhausted(
  scope: CreditScope,
  outcome: { retryAfterSeconds: number | null },
): AccessDenial {
  const whose = scope === 'key' ? 'The key has' : "The key's identity has";
  return new AccessDenial(
    AccessDenialCode.CreditsExhausted,
    outcome.retryAfterSeconds === null
      ? `${whose} no credits left.`
      : `${whose} no credits left until its next refill.`,
    outcome.retryAfterSeconds === null ? {} : { 'Retry-After': String(outcome.retryAfterSeconds) },
    // A key's own refusal is audited as it was before identities; an identity's says so.
    scope === 'identity' ? { scope } : {},
    { scope },
  );
}
