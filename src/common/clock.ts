import { Global, Injectable, Module } from '@nestjs/common';

/**
 * The time as the services that work by the calendar see it (credit refills at 00:00 UTC, usage
 * buckets by the hour) and as rate-limit windows counted in this process do (Redis's windows use
 * Redis's clock). One injectable, so a test can move time forward with `ManualClock` instead of
 * waiting for midnight or a window's edge (test/support/manual-clock.ts overrides it). Everything else
 * reads Date.now().
 */
@Injectable()
export class Clock {
  now(): number {
    return Date.now();
  }

  date(): Date {
    return new Date(this.now());
  }
}

@Global()
@Module({ providers: [Clock], exports: [Clock] })
export class ClockModule {}
