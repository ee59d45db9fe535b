import { type INestApplication, MethodNotAllowedException, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export interface DeclaredRoute {
  /** Upper case, as Express sees it: `GET`; `ALL` for `@All()`. */
  method: string;
  /** Express's form: `/v1/api-keys/:id`. */
  path: string;
}

const joinPaths = (...parts: string[]): string =>
  `/${parts
    .flatMap((part) => part.split('/'))
    .filter(Boolean)
    .join('/')}`;

/**
 * Every route the app's controllers declare, read through Nest's public discovery API and the routing
 * metadata `@Controller()` and `@Get()` leave (the constants @nestjs/common exports for them). The app
 * sets no global prefix, versioning or RouterModule paths, which would move these.
 */
export function declaredRoutes(app: INestApplication): DeclaredRoute[] {
  const discovery = new DiscoveryService(app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const routes: DeclaredRoute[] = [];
  for (const { instance, metatype } of discovery.getControllers()) {
    if (!instance || !metatype) continue;
    const prefixes = [Reflect.getMetadata(PATH_METADATA, metatype) as string | string[] | undefined].flat();
    const prototype = Object.getPrototypeOf(instance) as object;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const handler = (prototype as Record<string, unknown>)[name] as object;
      const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (paths === undefined || method === undefined) continue;
      for (const prefix of prefixes) {
        for (const path of [paths].flat()) {
          routes.push({ method: RequestMethod[method], path: joinPaths(prefix ?? '', path) });
        }
      }
    }
  }
  return routes;
}

interface PathTemplate {
  /** Literal segments lower-cased (Express matches paths case-insensitively); `undefined` for a `:param`. */
  segments: (string | undefined)[];
  methods: Set<string>;
}

/**
 * The last handler before Nest's 404: a request on a path some route declares, with a method none of
 * that path's routes takes, is answered 405 with `Allow` (RFC 9110 §15.5.6) instead of 404, which
 * would say that the resource does not exist. Express tries the routes first, so anything that reaches
 * this found no route for its method; paths no route declares go on to the 404. Matching is by segment:
 * a `:param` takes any one segment, as in Express; a path with wildcards or patterns is left to the 404.
 * `OPTIONS` on such a path is answered 204 with the same `Allow`, which lists `OPTIONS` too.
 */
export function methodNotAllowed(routes: readonly DeclaredRoute[]): RequestHandler {
  const templates = new Map<string, PathTemplate>();
  for (const { method, path } of routes) {
    if (/[*?+(){}]/.test(path)) continue;
    const segments = path
      .split('/')
      .filter(Boolean)
      .map((segment) => (segment.startsWith(':') ? undefined : segment.toLowerCase()));
    const key = segments.map((segment) => segment ?? ':').join('/');
    const template = templates.get(key) ?? { segments, methods: new Set<string>() };
    template.methods.add(method);
    if (method === 'GET') template.methods.add('HEAD');
    templates.set(key, template);
  }
  const all = [...templates.values()];

  return (request: Request, response: Response, next: NextFunction): void => {
    const segments = request.path.split('/').filter(Boolean);
    const allowed = new Set<string>();
    for (const template of all) {
      if (template.segments.length !== segments.length) continue;
      if (
        template.segments.every(
          (segment, i) => segment === undefined || segment === segments[i].toLowerCase(),
        )
      ) {
        template.methods.forEach((method) => allowed.add(method));
      }
    }
    // No such path, or one a route takes every method of (`@All()`): not this handler's to answer.
    if (allowed.size === 0 || allowed.has('ALL') || allowed.has(request.method)) return next();
    // OPTIONS asks what the resource takes (RFC 9110 §9.3.7): every declared path answers it, with Allow.
    allowed.add('OPTIONS');
    response.setHeader('Allow', [...allowed].join(', '));
    if (request.method === 'OPTIONS') {
      response.status(204).end();
      return;
    }
    next(new MethodNotAllowedException(`${request.method} is not allowed here; Allow lists what is.`));
  };
}
