import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';

/**
 * Last step, concurrency: at most MAX_CONCURRENT_REQUESTS_PER_KEY requests of one key in flight in
 * this instance. The slot is released when the response closes, whether it finished or was aborted.
 */
@Injectable()
export class ConcurrencyStep implements AccessStep {
  private readonly inFlight = new Map<string, number>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** Requests of the key in flight in this instance right now. */
  inFlightOf(keyId: string): number {
    return this.inFlight.get(keyId) ?? 0;
  }

  async check({ request, response }: AccessAttempt): Promise<StepOutcome> {
    const keyId = request.principal?.key?.id;
    if (!keyId) return undefined;
    const current = this.inFlight.get(keyId) ?? 0;
    const limit = this.config.MAX_CONCURRENT_REQUESTS_PER_KEY;
    if (current >= limit) {
      return new AccessDenial(
        AccessDenialCode.TooManyConcurrentRequests,
        `At most ${limit} requests of one key may be in flight.`,
        { 'Retry-After': '1' },
      );
    }
    this.inFlight.set(keyId, current + 1);
    response.once('close', () => {
      const left = (this.inFlight.get(keyId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(keyId, left);
      else this.inFlight.delete(keyId);
    });
    return undefined;
  }
}
