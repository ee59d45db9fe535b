import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { CreditAccount } from '../../api-keys/credits/credit-ledger';
import { CreditedKey, CreditsService } from '../../api-keys/credits/credits.service';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';

declare module 'http' {
  interface IncomingMessage {
    /** Set by the credits step: the key's balance after this request's credit (verify shows it). */
    creditsRemaining?: number;
    /**
     * Set by the credits step: where this request's credit came from, so that a refusal after the key
     * check (a task whose max_credits the balance cannot cover) can give it back.
     */
    creditSpent?: CreditAccount;
  }
}

/**
 * Step 5, credits: a key with a balance spends one credit per request that passed credential,
 * restrictions, permission, policies and rate limit; with none left it is refused (429
 * `credits_exhausted`, Retry-After up to the next refill). Keys without credits (the default) pass
 * without a lookup or a turn of the event loop. A later step's refusal gives the credit back (`undo`).
 */
@Injectable()
export class CreditsStep implements AccessStep {
  constructor(private readonly credits: CreditsService) {}

  check({ request }: AccessAttempt): StepOutcome | Promise<StepOutcome> {
    const key = request.principal?.key?.credits;
    if (!key) return undefined;
    return this.spend(request, key);
  }

  private async spend(request: Request, key: CreditedKey): Promise<StepOutcome> {
    const outcome = await this.credits.spend(key);
    if (outcome.spent) {
      request.creditsRemaining = outcome.remaining;
      request.creditSpent = outcome.account;
      return undefined;
    }
    return new AccessDenial(
      AccessDenialCode.CreditsExhausted,
      outcome.retryAfterSeconds === null
        ? 'The key has no credits left.'
        : 'The key has no credits left until its next refill.',
      outcome.retryAfterSeconds === null ? {} : { 'Retry-After': String(outcome.retryAfterSeconds) },
    );
  }

  /** A later step refused the request (or failed): it spends nothing, so its credit goes back. */
  async undo({ request }: AccessAttempt): Promise<void> {
    const account = request.creditSpent;
    if (!account) return;
    delete request.creditSpent;
    delete request.creditsRemaining;
    await this.credits.refund(account);
  }
}
