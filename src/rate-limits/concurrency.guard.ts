import { CanActivate, ExecutionContext, HttpStatus, Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemException } from '../common/problem';
import { APP_CONFIG, AppConfig } from '../config/app-config';

/**
 * Last global guard: at most MAX_CONCURRENT_REQUESTS_PER_KEY requests of one key in flight in this
 * instance. The slot is released when the response closes, whether it finished or was aborted.
 */
@Injectable()
export class ConcurrencyGuard implements CanActivate {
  private readonly inFlight = new Map<string, number>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const keyId = http.getRequest<Request>().principal?.key?.id;
    if (!keyId) return true;
    const current = this.inFlight.get(keyId) ?? 0;
    if (current >= this.config.MAX_CONCURRENT_REQUESTS_PER_KEY) {
      throw new ProblemException(
        HttpStatus.TOO_MANY_REQUESTS,
        'too_many_concurrent_requests',
        `At most ${this.config.MAX_CONCURRENT_REQUESTS_PER_KEY} requests of one key may be in flight.`,
        {},
        { 'Retry-After': '1' },
      );
    }
    this.inFlight.set(keyId, current + 1);
    http.getResponse<Response>().once('close', () => {
      const left = (this.inFlight.get(keyId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(keyId, left);
      else this.inFlight.delete(keyId);
    });
    return true;
  }
}
