import type { INestApplication } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';

const joinPaths = (...parts: string[]): string =>
  `/${parts
    .flatMap((part) => part.split('/'))
    .filter(Boolean)
    .join('/')}`;

/**
 * Every route the application's controllers declare, read through Nest's public discovery API and
 * the routing metadata `@Controller()`/`@Get()` leave, independently of Swagger's bookkeeping.
 * Paths use Express's `:param` form; methods are upper-case (`GET`).
 */
export function registeredRoutes(app: INestApplication): Array<{ method: string; path: string }> {
  const discovery = new DiscoveryService(app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const routes: Array<{ method: string; path: string }> = [];
  for (const wrapper of discovery.getControllers()) {
    const { instance, metatype } = wrapper;
    if (!instance || !metatype) continue;
    const prefixes = [Reflect.getMetadata(PATH_METADATA, metatype) as string | string[]].flat();
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
