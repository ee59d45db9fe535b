import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Router } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** The part of an Express router layer this module reads. */
interface Layer {
  route?: { path: unknown; methods: Record<string, boolean>; _handlesMethod(method: string): boolean };
  handle: unknown;
}

interface ExpressRouter {
  stack: Layer[];
  handle(req: Request, res: Response, next: NextFunction): void;
}

/** The dispatch layer keeps the routes it took over, so they can still be listed (registeredRoutes). */
interface IndexedDispatch extends RequestHandler {
  indexedRoutes: Layer[];
}

// A path prefix made only of characters that match themselves: no parameter, wildcard, group or escape.
const LITERAL_PREFIX = /^(\/[A-Za-z0-9._~-]*)+$/;
const PREFIX_SEGMENTS = 2;

/**
 * The first segments of a path (`/v1/auth` for `/v1/auth/verify`, `/metrics` for `/metrics`),
 * lower-cased: the bucket key. One trailing slash is ignored, as Express's non-strict routes do.
 */
function prefixOf(path: string): string {
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  let slashes = 0;
  for (let i = 0; i < end; i++) {
    if (path.charCodeAt(i) === 47 /* / */ && ++slashes > PREFIX_SEGMENTS)
      return path.slice(0, i).toLowerCase();
  }
  return path.slice(0, end).toLowerCase();
}

/**
 * The keys of every path a route can match, or undefined when its first segments are not literal.
 * A non-strict route matches its pattern with or without one more trailing slash, so both are keyed
 * (they differ only for a short route that ends in a slash, such as `/docs/`).
 */
function routeKeys(layer: Layer): string[] | undefined {
  const path = layer.route?.path;
  if (typeof path !== 'string' || !path.startsWith('/')) return undefined;
  const prefix = prefixOf(path);
  if (!LITERAL_PREFIX.test(prefix)) return undefined;
  return [...new Set([prefix, prefixOf(`${path}/`)])];
}

/**
 * Express tries its route layers one by one, so a request for the fortieth route first pays for
 * thirty-nine failed matches, and the key check sits on every request. This replaces each run of
 * consecutive route layers with one layer that picks, by the path's first two segments, the routes
 * that could match it, and hands the request to a router holding just those, in their original
 * order. Routes whose first segments are not literal (`/:tenant/...`) stay candidates for every
 * path. A route with literal first segments matches only paths that start with them (Express matches
 * case-insensitively and tolerates one trailing slash, and so does the key), so the result is the
 * same route Express would have picked, and everything else (middleware, error handlers, Nest's 404)
 * keeps its place.
 *
 * One difference is kept out deliberately: a router answers an OPTIONS request for a known path by
 * itself (200 with `Allow`), where Nest's 404 handler answered before. OPTIONS requests therefore
 * skip the index unless a candidate route declares OPTIONS.
 */
export function indexRoutes(router: ExpressRouter): void {
  const stack = router.stack;
  for (let start = 0; start < stack.length; start++) {
    if (!stack[start].route) continue;
    let end = start;
    while (end < stack.length && stack[end].route) end++;
    if (end - start > 1) stack.splice(start, end - start, dispatchLayer(stack.slice(start, end)));
  }
}

function dispatchLayer(routes: Layer[]): Layer {
  const bucket = (key: string | undefined) => {
    const subRouter = Router() as unknown as ExpressRouter;
    // Layers are moved as they are, already compiled with the application's matching options.
    subRouter.stack = routes.filter((layer) => {
      const own = routeKeys(layer);
      return own === undefined || (key !== undefined && own.includes(key));
    });
    return {
      router: subRouter,
      empty: subRouter.stack.length === 0,
      answersOptions: subRouter.stack.some((layer) => layer.route!._handlesMethod('OPTIONS')),
    };
  };
  const keys = new Set(routes.flatMap((layer) => routeKeys(layer) ?? []));
  const buckets = new Map([...keys].map((key) => [key, bucket(key)]));
  const unkeyed = bucket(undefined);

  const dispatch = ((req: Request, res: Response, next: NextFunction) => {
    const target = buckets.get(prefixOf(req.path)) ?? unkeyed;
    if (target.empty || (req.method === 'OPTIONS' && !target.answersOptions)) return next();
    target.router.handle(req, res, next);
  }) as IndexedDispatch;
  dispatch.indexedRoutes = routes;

  // A middleware layer for every path, made the way Express makes `app.use(fn)` layers.
  const maker = Router() as unknown as ExpressRouter & { use(fn: RequestHandler): void };
  maker.use(dispatch);
  return maker.stack[0];
}

/** Every route layer, whether still in the stack or taken over by an index layer. */
export function routeLayers(router: ExpressRouter): Layer[] {
  return router.stack.flatMap((layer) => {
    const indexed = (layer.handle as Partial<IndexedDispatch>).indexedRoutes;
    return indexed ?? (layer.route ? [layer] : []);
  });
}

/** Builds the index once Nest has registered every route and its 404 and error handlers. */
@Injectable()
export class RouteIndexer implements OnApplicationBootstrap {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onApplicationBootstrap(): void {
    const instance = this.adapterHost.httpAdapter?.getInstance() as { router?: ExpressRouter } | undefined;
    if (instance?.router?.stack) indexRoutes(instance.router);
  }
}
