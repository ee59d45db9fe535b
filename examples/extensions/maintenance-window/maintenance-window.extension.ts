import { defineExtension } from '../../../src/extension';
import type { MaintenanceSchedule } from './maintenance-window.policy';
import { MaintenanceWindowModule } from './maintenance-window.module';

/**
 * An access policy: an HTTP part only (the key check runs in the API; the worker has none to load).
 * The line in an extension list names the window:
 *
 *   maintenanceWindowExtension({ weekday: 'sunday', from: '02:00', minutes: 60 }),
 */
export function maintenanceWindowExtension(schedule: MaintenanceSchedule) {
  return defineExtension({
    name: 'maintenance-window',
    httpModule: MaintenanceWindowModule.forRoot(schedule),
  });
}
