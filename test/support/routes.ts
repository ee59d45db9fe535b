import type { INestApplication } from '@nestjs/common';
import { declaredRoutes } from '../../src/http/method-not-allowed';

/**
 * Every route the application's controllers declare, read through Nest's public discovery API and
 * the routing metadata `@Controller()`/`@Get()` leave, independently of Swagger's bookkeeping: the
 * same reading the 405 handler makes (declaredRoutes).
 * Paths use Express's `:param` form; methods are upper-case (`GET`).
 */
export function registeredRoutes(app: INestApplication): Array<{ method: string; path: string }> {
  return declaredRoutes(app);
}
