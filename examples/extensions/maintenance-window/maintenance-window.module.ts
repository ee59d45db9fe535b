import { DynamicModule, Module } from '@nestjs/common';
import {
  MAINTENANCE_SCHEDULE,
  MaintenanceSchedule,
  MaintenanceWindowPolicy,
} from './maintenance-window.policy';

/**
 * The policy with its schedule. Providing it is all that is needed: the key check finds every
 * `@AccessPolicy` provider of the app, whatever module provides it.
 */
@Module({})
export class MaintenanceWindowModule {
  static forRoot(schedule: MaintenanceSchedule): DynamicModule {
    const [hours, minutes] = schedule.from.split(':').map(Number);
    // A schedule that cannot be read must stop the start, not open (or never open) a window.
    if (!/^\d{2}:\d{2}$/.test(schedule.from) || hours > 23 || minutes > 59) {
      throw new Error(`maintenance window: "from" must be HH:MM (UTC), not "${schedule.from}"`);
    }
    if (!Number.isInteger(schedule.minutes) || schedule.minutes < 1 || schedule.minutes > 24 * 60) {
      throw new Error('maintenance window: "minutes" must be an integer from 1 to 1440');
    }
    return {
      module: MaintenanceWindowModule,
      providers: [{ provide: MAINTENANCE_SCHEDULE, useValue: schedule }, MaintenanceWindowPolicy],
    };
  }
}
