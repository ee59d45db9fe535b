import { Inject, Injectable } from '@nestjs/common';
import type { AccessAttempt, AccessStep, StepOutcome } from '../../../src/access/access-attempt';
import { AccessDenial, defineAccessDenial } from '../../../src/access/access-denial';
import { AccessPolicy } from '../../../src/access/access-policy';
import { Clock } from '../../../src/common/clock';
import type { ConfigOf } from '../../../src/config/config-namespace';
import { maintenanceWindowConfig, type MaintenanceSchedule, WEEKDAYS } from './maintenance-window.config';

/**
 * Its refusal, declared once: the key check answers it like a built-in one (problem+json, this status).
 * Not audited: the key did nothing wrong. The README.md beside this file lists it (the test checks).
 */
defineAccessDenial('maintenance_window', { status: 503, audited: false });

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
const WEEK_MS = 7 * DAY_MS;
// 1970-01-01, where time 0 falls, was a Thursday.
const EPOCH_WEEKDAY = WEEKDAYS.indexOf('thursday');
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** When the window around `now` ends, or undefined when `now` is outside it. */
export function windowEndAround(schedule: MaintenanceSchedule, now: number): number | undefined {
  const [hours, minutes] = schedule.from.split(':').map(Number);
  const days = (WEEKDAYS.indexOf(schedule.weekday) - EPOCH_WEEKDAY + 7) % 7;
  const start = days * DAY_MS + (hours * 60 + minutes) * MINUTE_MS;
  const sinceStart = (((now - start) % WEEK_MS) + WEEK_MS) % WEEK_MS;
  const length = schedule.minutes * MINUTE_MS;
  return sinceStart < length ? now - sinceStart + length : undefined;
}

/**
 * Writes are paused during a weekly maintenance window: POST, PUT, PATCH and DELETE are refused with 503
 * and a Retry-After until it ends; reads go on. A policy of the key check (`@AccessPolicy`): it runs for
 * every protected request after the permission step, so a caller lacking the permission still hears
 * `forbidden`, and before the rate limit, so a refused write spends no budget. It answers without a
 * promise (no I/O), so requests pay no extra turn of the event loop. Time comes from the app's Clock,
 * which a test replaces; the window comes from the extension's configuration (MAINTENANCE_WINDOW_*).
 */
@AccessPolicy({ order: 10 })
@Injectable()
export class MaintenanceWindowPolicy implements AccessStep {
  constructor(
    @Inject(maintenanceWindowConfig.KEY)
    private readonly schedule: ConfigOf<typeof maintenanceWindowConfig>,
    private readonly clock: Clock,
  ) {}

  check({ request }: AccessAttempt): StepOutcome {
    if (SAFE_METHODS.has(request.method)) return undefined;
    const now = this.clock.now();
    const end = windowEndAround(this.schedule, now);
    if (end === undefined) return undefined;
    return new AccessDenial(
      'maintenance_window',
      `Writes are paused for maintenance until ${new Date(end).toISOString()}.`,
      { 'Retry-After': String(Math.ceil((end - now) / 1000)) },
    );
  }
}
