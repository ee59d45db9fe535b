import { defineExtension } from '../../../src/extension';
import { maintenanceWindowConfig } from './maintenance-window.config';
import { MaintenanceWindowModule } from './maintenance-window.module';

/**
 * An access policy: an HTTP part only (the key check runs in the API; the worker has none to load).
 * The window is configured like the rest of Gatehouse, from `.env` or the environment:
 *
 *   MAINTENANCE_WINDOW_WEEKDAY=sunday
 *   MAINTENANCE_WINDOW_FROM=02:00      (HH:MM, UTC)
 *   MAINTENANCE_WINDOW_MINUTES=60
 */
export const maintenanceWindowExtension = defineExtension({
  name: 'maintenance-window',
  config: maintenanceWindowConfig,
  httpModule: MaintenanceWindowModule,
});
