import { Injectable, Logger } from '@nestjs/common';
import { SYSTEM_ACTOR } from '../../audit/audit.service';
import { InvalidationBus } from '../../cache-invalidation/invalidation-bus';
import { Clock } from '../../common/clock';
import type { CreditState } from './credit-balance-table';
import type { Identity } from '../../identities/identity.entity';
import { IdentitiesService } from '../../identities/identities.service';
import { IdentityBalances } from '../../identities/identity-balances';
import type { ApiKey } from '../api-key.entity';
import { ApiKeysRepository } from '../api-keys.repository';
import { KeyChangeRecorder } from '../key-change-recorder';
import { TickBatch } from '../../common/tick-batch';
import {
  CreditAccount,
  CreditLedger,
  CreditRide,
  Reservation,
  ReservationResult,
  reserveGroupedByKey,
} from './credit-ledger';
import type { CreditedIdentity, CreditHolder } from './credit-holders';
import { creditTableOf, CreditTables } from './credit-tables';
import { dueRefill, refillBoundaryAfter } from './refill-schedule';

// Declared apart so the principal can name a key's balance without depending on this service.
export type { CreditedIdentity, CreditedKey, CreditHolder } from './credit-holders';

/** A holder's row as read for its object (the key's or identity's `credits`), to show the live balance. */
type BalanceRow = (ApiKey | Identity) & { creditsRemaining: number };

export type SpendOutcome =
  | { spent: true; account: CreditAccount; remaining: number }
  | { spent: false; retryAfterSeconds: number | null };

/**
 * Credits of several holders prepared to ride with a request's windows (CreditsService.rideFor):
 * `window` goes to the rate-limit storage, the rest settles what it answered.
 */
export interface CreditsRide {
  readonly window: CreditRide;
  readonly holders: readonly CreditHolder[];
}

/** What a ride spent: from every holder, or from none because holder `short` had too few. */
export type RideSpendOutcome =
  | { spent: true; accounts: CreditAccount[]; remaining: number }
  | { spent: false; short: number; retryAfterSeconds: number | null };

const MAX_REFILL_MEMOS = 100_000;

/** `key.credits_low` is sent when the balance falls below this share of the amount last set or refilled. */
const LOW_SHARE = 0.1;

/**
 * Credits: a balance per key or identity, spent one per request that passed everything before it,
 * refilled at 00:00 UTC daily or on the 1st monthly. The ledger (database, or Redis backed by the
 * database) keeps it exact across instances; this service adds the calendar and the low-balance event
 * (`key.credits_low` or `identity.credits_low`).
 */
@Injectable()
export class CreditsService {
  private readonly logger = new Logger('Credits');
  /** Refills this instance already made or saw refused, by key: no UPDATE per request until the cache reloads. */
  private readonly refilledFor = new Map<string, { boundary: number; generation: number }>();
  /** Reservations of one turn of the event loop, one ledger call per balance (reserveGroupedByKey). */
  private readonly reservations = new TickBatch<Reservation, ReservationResult>((batch) =>
    reserveGroupedByKey(batch, (account, count) => this.ledger.reserve(account, count)),
  );

  constructor(
    private readonly ledger: CreditLedger,
    private readonly tables: CreditTables,
    private readonly keys: ApiKeysRepository,
    private readonly changes: KeyChangeRecorder,
    private readonly identities: IdentitiesService,
    private readonly invalidations: InvalidationBus,
    private readonly clock: Clock,
    identityBalances: IdentityBalances,
  ) {
    identityBalances.register({
      live: (identities) => this.balances(identities),
      published: (identity, state) => this.published(identity, state),
    });
  }

  /** One credit of the holder, refilling first if a refill is due; with none left, when to retry. */
  async spend(key: CreditHolder): Promise<SpendOutcome> {
    const now = this.clock.date();
    const generation = await this.refillIfDue(key, now);
    const account = { keyId: key.id, organizationId: key.organizationId, generation };
    const granted = await this.ledger.spend(account);
    if (!granted) return { spent: false, retryAfterSeconds: retryAfterSeconds(key, now) };
    if (crossedLowMark(granted)) void this.recordLow(key, granted);
    return { spent: true, account: granted.account, remaining: granted.remaining };
  }

  /**
   * `count` credits of each holder, all or none, prepared to be spent in the Redis run that counts the
   * request's rate-limit windows (RateLimitStep carries `window`: one round trip for both), or null: the
   * ledger cannot (CreditLedger.rideFor), or a refill is due that this instance has not made (spending
   * the usual way makes it). Nothing is spent until the run; `settleRide` reads its answer.
   */
  rideFor(holders: readonly CreditHolder[], count: number): CreditsRide | null {
    if (!this.ledger.riderLua) return null;
    const now = this.clock.date();
    const accounts: CreditAccount[] = [];
    for (const holder of holders) {
      const generation = this.generationKnown(holder, now);
      if (generation === null) return null;
      accounts.push({ keyId: holder.id, organizationId: holder.organizationId, generation });
    }
    const window = this.ledger.rideFor(accounts, count);
    return window && { window, holders };
  }

  /** What the ride spent, as `spend` would answer for each holder; null: spend the usual way. */
  settleRide({ window, holders }: CreditsRide): RideSpendOutcome | null {
    const outcome = this.ledger.settleRide(window);
    if (!outcome) return null;
    if ('short' in outcome) {
      const retry = retryAfterSeconds(holders[outcome.short], this.clock.date());
      return { spent: false, short: outcome.short, retryAfterSeconds: retry };
    }
    outcome.granted.forEach((granted, i) => {
      if (crossedLowMarkBy(granted, window.count)) void this.recordLow(holders[i], granted);
    });
    const accounts = outcome.granted.map((granted) => granted.account);
    return { spent: true, accounts, remaining: outcome.granted[0].remaining };
  }

  /** The Lua of the ledger's ride, which the rate-limit storage carries (undefined: it has none). */
  get riderLua(): string | undefined {
    return this.ledger.riderLua;
  }

  refund(account: CreditAccount): Promise<void> {
    return this.ledger.refund(account);
  }

  /**
   * Reserves `count` credits of the key at once, all or none, refilling first if a refill is due (a
   * task's max_credits, CONTRACT "Costs"): the account they came from, or null when fewer are left.
   */
  async reserve(key: CreditHolder, count: number): Promise<CreditAccount | null> {
    return (await this.spendAtOnce(key, count))?.account ?? null;
  }

  /**
   * Spends `count` credits of the key at once, all or none, as `reserve` does (a verified key's cost,
   * CONTRACT "Verifying keys for other services"): the account and the balance left, or null when
   * fewer were left.
   */
  async spendAtOnce(
    key: CreditHolder,
    count: number,
  ): Promise<{ account: CreditAccount; remaining: number } | null> {
    const generation = await this.refillIfDue(key, this.clock.date());
    const account = { keyId: key.id, organizationId: key.organizationId, generation };
    const result = await this.reservations.add({ account, count });
    if ('error' in result) throw result.error;
    const granted = result.granted;
    if (!granted) return null;
    if (crossedLowMarkBy(granted, count)) void this.recordLow(key, granted);
    return { account: granted.account, remaining: granted.remaining };
  }

  /** Gives back a reservation whose task was not made. */
  releaseReserved(account: CreditAccount, count: number): Promise<void> {
    return this.ledger.releaseReserved(account, count);
  }

  /** Gives back what a settled run did not use, once per settlement (only Redis-held reservations). */
  giveBackReserved(account: CreditAccount, count: number, settlementId: string): Promise<void> {
    return this.ledger.giveBackReserved(account, count, settlementId);
  }

  /**
   * The live balance of each key or identity with credits (refilling those due), for its object; those
   * without credits are absent.
   */
  async balances(holders: readonly (ApiKey | Identity)[]): Promise<Map<string, number>> {
    const credited = holders.filter((holder): holder is BalanceRow => holder.creditsRemaining !== null);
    const now = this.clock.date();
    for (const key of credited) {
      const boundary = dueRefill(key, now);
      if (!boundary) continue;
      const state = await this.refill(key, boundary);
      if (state) {
        Object.assign(key, {
          creditsRemaining: state.remaining,
          creditsBaseline: state.baseline,
          creditsGeneration: state.generation,
          creditsRefilledAt: boundary,
        });
      }
    }
    return this.ledger.balances(
      credited.map((key) => ({
        keyId: key.id,
        organizationId: key.organizationId,
        state: creditStateOf(key),
        epoch: key.creditsEpoch,
      })),
    );
  }

  /** After a create or PATCH set the balance (committed): it is the live one from now on, everywhere. */
  async published(
    holder: Pick<ApiKey | Identity, 'id' | 'organizationId'>,
    state: CreditState,
  ): Promise<void> {
    this.refilledFor.delete(holder.id);
    await this.ledger.publish({ keyId: holder.id, organizationId: holder.organizationId }, state);
  }

  /** The scheduled refill (credit-refill.job.ts), for balances nobody spent since their boundary. */
  async refillIfDueNow(key: ApiKey | Identity): Promise<boolean> {
    const boundary = dueRefill(key, this.clock.date());
    return boundary ? (await this.refill(key, boundary)) !== null : false;
  }

  /** The generation to spend from: the key's, or the new one if a refill was due and made here. */
  private async refillIfDue(key: CreditHolder, now: Date): Promise<number> {
    const known = this.generationKnown(key, now);
    if (known !== null) return known;
    const boundary = dueRefill(key, now)!;
    const state = await this.refill(key, boundary);
    // Another instance refilled first: spend from the generation its refill made.
    const generation =
      state?.generation ?? (await this.tables.of(key.id).read(key.id))?.generation ?? key.creditsGeneration;
    // A memo, not a record: forgetting it costs one conditional UPDATE that changes nothing.
    if (this.refilledFor.size >= MAX_REFILL_MEMOS) this.refilledFor.clear();
    this.refilledFor.set(key.id, { boundary: boundary.getTime(), generation });
    return generation;
  }

  /**
   * The generation to spend from when no refill is to be made first: the key's when none is due, the
   * one this instance's refill made (or found) when it made one since the boundary; else null.
   */
  private generationKnown(key: CreditHolder, now: Date): number | null {
    const boundary = dueRefill(key, now);
    if (!boundary) return key.creditsGeneration;
    const known = this.refilledFor.get(key.id);
    if (known && known.boundary >= boundary.getTime())
      return Math.max(known.generation, key.creditsGeneration);
    return null;
  }

  private async refill(
    holder: Pick<ApiKey | Identity, 'id' | 'organizationId'>,
    boundary: Date,
  ): Promise<CreditState | null> {
    const state = await this.tables.of(holder.id).refill(holder.id, boundary);
    if (!state) return null;
    await this.ledger.publish({ keyId: holder.id, organizationId: holder.organizationId }, state);
    // Other instances' cached key records still carry the old schedule; they reload within a second.
    this.invalidations.publish(
      isIdentity(holder) ? { kind: 'identity', identityId: holder.id } : { kind: 'key', keyId: holder.id },
    );
    return state;
  }

  /** Once per generation, whichever instance's spend crossed the mark (claimed on the row). */
  private async recordLow(holder: CreditHolder, state: CreditState): Promise<void> {
    const table = this.tables.of(holder.id);
    const details = { remaining: state.remaining, amount: state.baseline };
    try {
      if (isIdentity(holder)) {
        await this.identities.recordCreditsLow(holder, details, (manager) =>
          table.claimLow(manager, holder.id, state.generation),
        );
        return;
      }
      await this.keys.transaction(async (manager) => {
        if (!(await table.claimLow(manager, holder.id, state.generation))) return;
        await this.changes.record(manager, [
          { key: holder, action: 'key.credits_low', actor: SYSTEM_ACTOR, details },
        ]);
      });
    } catch (error) {
      this.logger.warn(`could not record the low balance of ${holder.id}: ${(error as Error).message}`);
    }
  }
}

/** A refused spend's Retry-After: up to the holder's next refill, or null when it has none. */
function retryAfterSeconds(key: CreditHolder, now: Date): number | null {
  const retryAt = key.creditsRefillInterval ? refillBoundaryAfter(key.creditsRefillInterval, now) : null;
  return retryAt ? Math.max(1, Math.ceil((retryAt.getTime() - now.getTime()) / 1000)) : null;
}

function isIdentity(holder: Pick<CreditHolder, 'id'>): holder is CreditedIdentity {
  return creditTableOf(holder.id) === 'identities';
}

/** A key's or identity's row balance as the ledger takes it (the row of one that has credits). */
export function creditStateOf(
  key: Pick<ApiKey | Identity, 'creditsRemaining' | 'creditsBaseline' | 'creditsGeneration'>,
): CreditState {
  return {
    remaining: key.creditsRemaining!,
    baseline: key.creditsBaseline ?? key.creditsRemaining!,
    generation: key.creditsGeneration,
  };
}

/** True for the one spend that took the balance below the mark (balances only fall within a generation). */
function crossedLowMark(state: CreditState): boolean {
  return crossedLowMarkBy(state, 1);
}

/** The same for `spent` credits spent at once (a reservation). */
function crossedLowMarkBy({ remaining, baseline }: CreditState, spent: number): boolean {
  const mark = baseline * LOW_SHARE;
  return remaining < mark && remaining + spent >= mark;
}
