import { defineIdKind } from '../common/ids';

/** The ids the events module issues (events are read through webhooks and tasks, not a resource of their own). */
export const EVENT_ID = defineIdKind('evt');
