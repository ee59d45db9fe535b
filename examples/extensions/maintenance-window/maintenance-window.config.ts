import { Transform } from 'class-transformer';
import { IsIn, IsInt, Matches, Max, Min } from 'class-validator';
import { toInt } from '../../../src/config/environment';
import { extensionConfig } from '../../../src/config/extension-config';

export const WEEKDAYS = [
  'sunday',
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
] as const;

/** A weekly window in UTC, e.g. `{ weekday: 'sunday', from: '02:00', minutes: 60 }`. */
export interface MaintenanceSchedule {
  weekday: (typeof WEEKDAYS)[number];
  /** `HH:MM`, UTC. */
  from: string;
  minutes: number;
}

/**
 * The window's variables, written as the core's are (src/config/environment.ts) and listed in
 * `.env.example`: a schedule that cannot be read stops the start with a line naming its variable,
 * rather than opening (or never opening) a window.
 */
class MaintenanceWindowVariables {
  @IsIn(WEEKDAYS)
  MAINTENANCE_WINDOW_WEEKDAY: MaintenanceSchedule['weekday'] = 'sunday';

  @Matches(/^([01]\d|2[0-3]):[0-5]\d$/, { message: 'MAINTENANCE_WINDOW_FROM must be HH:MM (UTC)' })
  MAINTENANCE_WINDOW_FROM = '02:00';

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(24 * 60)
  MAINTENANCE_WINDOW_MINUTES = 60;
}

/** What MaintenanceWindowPolicy injects: `@Inject(maintenanceWindowConfig.KEY)`. */
export const maintenanceWindowConfig = extensionConfig(
  'maintenance-window',
  MaintenanceWindowVariables,
  (env): MaintenanceSchedule => ({
    weekday: env.MAINTENANCE_WINDOW_WEEKDAY,
    from: env.MAINTENANCE_WINDOW_FROM,
    minutes: env.MAINTENANCE_WINDOW_MINUTES,
  }),
);
