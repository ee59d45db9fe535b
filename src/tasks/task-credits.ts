import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import { CreditsService } from '../api-keys/credits/credits.service';
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

  /** The reserver for a create request; undefined when its key has no balance (or it has no key). */
  forRequest(request: Request): TaskCreditReserver | undefined {
    const key = request.principal?.key?.credits;
    if (!key) return undefined;
    return {
      reserve: async (count) => {
        const account = await this.credits.reserve(key, count);
        if (account) return account;
        // No task, and nothing spent: not even the request's own credit.
        const own = request.creditSpent;
        delete request.creditSpent;
        delete request.creditsRemaining;
        if (own) {
          await this.credits.refund(own);
          // The key check counted it in credits_spent; it was not spent after all.
          this.usage.count(key.organizationId, key.id, USAGE_MEASURES.creditsSpent, -1);
        }
        throw new TaskError(
          TaskErrorCode.CreditsExhausted,
          `The key has fewer than the ${count} credits this task reserves (max_credits) left.`,
        );
      },
      release: (account, count) => this.credits.releaseReserved(account, count),
    };
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
      for (const refund of await this.queue.pendingRefunds(SETTLEMENT_BATCH)) {
        await this.credits.giveBackReserved(refund.account, refund.count, refund.id);
        await this.queue.refundDone(refund.id);
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
