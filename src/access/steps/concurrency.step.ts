import { ConfigOf } from '../../config/config-namespace';
import { accessConfig } from '../../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import type { AccessAttempt, AccessStep, StepOutcome } from '../access-attempt';
import { AccessDenial, AccessDenialCode } from '../access-denial';

/**
 * Last step, concurrency: at most MAX_CONCURRENT_REQUESTS_PER_KEY requests of one key in flight in
 * this instance. The slot is released when the response closes, whether it finished or was aborted.
 */
@Injectable()
export class ConcurrencyStep implements AccessStep {
  private readonly inFlight = new Map<string, number>();

  constructor(@Inject(accessConfig.KEY) private readonly config: ConfigOf<typeof accessConfig>) {}

  /** Requests of the key in flight in this instance right now. */
  inFlightOf(keyId: string): number {
    return this.inFlight.get(keyId) ?? 0;
  }

  check({ request, response }: AccessAttempt): StepOutcome {
    const keyId = request.principal?.key?.id;
    if (!keyId) return undefined;
    const current = this.inFlight.get(keyId) ?? 0;
    const limit = this.config.maxConcurrentRequestsPerKey;
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
