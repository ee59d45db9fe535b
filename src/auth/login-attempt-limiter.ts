import { ConfigOf } from '../config/config-namespace';
import { authConfig } from '../config/namespaces';
import { Inject, Injectable } from '@nestjs/common';
import { AuthError, AuthErrorCode } from './auth.errors';

interface Window {
  failures: number;
  resetsAt: number;
}

// An address may fail more often than a single email: several people can share one NAT.
const PER_ADDRESS_MULTIPLIER = 4;
const MAX_TRACKED = 100_000;

/**
 * Slows password guessing: after LOGIN_MAX_FAILURES failures for one email (or four times that for
 * one client address) within the window, further attempts get 429 before any password is checked.
 * Counters are per process, a fixed window each.
 */
@Injectable()
export class LoginAttemptLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(@Inject(authConfig.KEY) private readonly config: ConfigOf<typeof authConfig>) {}

  assertAllowed(email: string, address: string): void {
    const now = Date.now();
    const retryAfter = Math.max(
      this.blockedFor(`email:${email}`, this.config.loginMaxFailures, now),
      this.blockedFor(`ip:${address}`, this.config.loginMaxFailures * PER_ADDRESS_MULTIPLIER, now),
    );
    if (retryAfter > 0) {
      throw new AuthError(
        AuthErrorCode.TooManyLoginAttempts,
        'Too many failed sign-in attempts; try again later.',
        { retryAfterSeconds: retryAfter },
      );
    }
  }

  recordFailure(email: string, address: string): void {
    const now = Date.now();
    for (const key of [`email:${email}`, `ip:${address}`]) {
      const window = this.current(key, now) ?? {
        failures: 0,
        resetsAt: now + this.config.loginFailureWindowSeconds * 1000,
      };
      window.failures += 1;
      this.windows.set(key, window);
    }
    if (this.windows.size > MAX_TRACKED) this.evictExpired(now);
  }

  recordSuccess(email: string): void {
    this.windows.delete(`email:${email}`);
  }

  private blockedFor(key: string, limit: number, now: number): number {
    const window = this.current(key, now);
    return window && window.failures >= limit ? Math.ceil((window.resetsAt - now) / 1000) : 0;
  }

  private current(key: string, now: number): Window | undefined {
    const window = this.windows.get(key);
    if (window && window.resetsAt <= now) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  private evictExpired(now: number): void {
    for (const [key, window] of this.windows) if (window.resetsAt <= now) this.windows.delete(key);
  }
}
