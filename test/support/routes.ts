import type { INestApplication } from '@nestjs/common';
import { routeLayers } from '../../src/common/route-index';

/**
 * The routes Express actually serves, read from its router (including those behind the route index), independently of Nest's and Swagger's
 * own bookkeeping. Catch-all middleware mounts (paths with `*`) are not endpoints. Methods are
 * upper-case (`GET`).
 */
export function registeredRoutes(app: INestApplication): Array<{ method: string; path: string }> {
  const express = app.getHttpAdapter().getInstance() as { router: Parameters<typeof routeLayers>[0] };
  const routes: Array<{ method: string; path: string }> = [];
  for (const layer of routeLayers(express.router)) {
    if (!layer.route || typeof layer.route.path !== 'string' || layer.route.path.includes('*')) continue;
    for (const method of Object.keys(layer.route.methods)) {
      if (method !== '_all') routes.push({ method: method.toUpperCase(), path: layer.route.path });
    }
  }
  return routes;
}
