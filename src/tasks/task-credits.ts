import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import type { CreditAccount } from '../api-keys/credits/credit-ledger';
import { CreditsService } from '../api-keys/credits/credits.service';
import { balancesOf } from '../access/steps/credits.step';
import { RedisConnection } from '../redis/redis.connection';
import { TaskQueueRepository } from './task-queue.repository';
import { UsageCounter } from '../usage/usage-counter';
import { USAGE_MEASURES } from '../usage/usage-measures';
import type { TaskCreditReserver } from './tasks.service';
import { TaskError, TaskErrorCode } from './tasks.errors';

/**
 * The tasks API's side of a task's credits (CONTRACT, "Costs"), where the credits service is: the
 * reservation when a task is created with a key that has a balance.
 */
@Injectable()
export class TaskCredits {
  constructor(
    private readonly credits: CreditsService,
    private readonly usage: UsageCounter,
  ) {}

  /**
   * The reserver for a create request; undefined when neither its key nor the key's identity has a
   * balance (or it has no key). Each balance that has one reserves all of max_credits, all or none.
   */
  forRequest(request: Request): TaskCreditReserver | undefined {
    const key = request.principal?.key;
    if (!key || (!key.credits && !key.identityControls?.credits)) return undefined;
    const balances = balancesOf(key);
    return {
      reserve: async (count) => {
        const reserved: CreditAccount[] = [];
        for (const { scope, holder } of balances) {
          const account = await this.credits.reserve(holder, count);
          if (account) {
            reserved.push(account);
            continue;
          }
          await this.release(reserved, count);
          await this.giveBackRequestCredit(request);
          throw new TaskError(
            TaskErrorCode.CreditsExhausted,
            `The ${scope === 'key' ? 'key' : "key's identity"} has fewer than the ${count} credits ` +
              'this task reserves (max_credits) left.',
            { extensions: { scope } },
          );
        }
        return reserved;
      },
      release: (accounts, count) => this.release(accounts, count),
    };
  }

  private async release(accounts: CreditAccount[], count: number): Promise<void> {
    await Promise.all(accounts.map((account) => this.credits.releaseReserved(account, count)));
  }

  /** No task, and nothing spent: not even the create request's own credit. */
  private async giveBackRequestCredit(request: Request): Promise<void> {
    const own = request.creditSpent;
    delete request.creditSpent;
    delete request.creditsRemaining;
    if (!own?.length) return;
    await Promise.all(own.map((account) => this.credits.refund(account)));
    // The key check counted it in credits_spent; it was not spent after all.
    const key = request.principal!.key!;
    this.usage.count(request.principal!.organizationId, key, USAGE_MEASURES.creditsSpent, -1);
  }
}

// How often the refunds Redis owes are looked for: a settled run's unused credits are back within it.
const SETTLEMENT_POLL_MS = 100;
const SETTLEMENT_BATCH = 100;

/**
 * With Redis, a task's settlement gives back what Redis holds after the outcome's commit (the database
 * half went with the outcome, ReservationSettlement): this job does it for every settled task left
 * `pending`, whichever process ended it, once per task (the Redis script marks the settlement), and
 * marks it done; a crash between the two only repeats a give-back that changes nothing. Without Redis
 * every settlement is whole at commit and the job does not run.
 */
@Injectable()
export class TaskCreditSettlements implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TaskCreditSettlements');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private lastWarning = 0;

  constructor(
    private readonly queue: TaskQueueRepository,
    private readonly credits: CreditsService,
    private readonly redis: RedisConnection,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.redis.client) return;
    this.timer = setInterval(() => {
      this.running ??= this.settlePending().finally(() => (this.running = undefined));
    }, SETTLEMENT_POLL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Gives back every refund Redis owes; answers how many were settled. */
  async settlePending(): Promise<number> {
    let settled = 0;
    try {
      // One row per balance Redis owes; a task is done once all of its balances got theirs back.
      const refunds = await this.queue.pendingRefunds(SETTLEMENT_BATCH);
      const byTask = new Map<string, typeof refunds>();
      for (const refund of refunds) byTask.set(refund.id, [...(byTask.get(refund.id) ?? []), refund]);
      for (const [taskId, owed] of byTask) {
        for (const refund of owed) await this.credits.giveBackReserved(refund.account, refund.count, taskId);
        await this.queue.refundDone(taskId);
        settled++;
      }
    } catch (error) {
      // Left pending: tried again at the next round.
      if (Date.now() - this.lastWarning > 60_000) {
        this.lastWarning = Date.now();
        this.logger.warn(`settling task reservations failed: ${(error as Error).message}`);
      }
    }
    return settled;
  }
}
