import { Accounts1795290908908 } from './1795290908908-Accounts';

/** Every migration in order; generated with `npm run migration:generate` and never edited after release. */
export const MIGRATIONS = [Accounts1795290908908];
