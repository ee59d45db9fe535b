import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, NestContainer, Reflector } from '@nestjs/core';
import {
  IS_PUBLIC,
  QUERY_PERMISSIONS,
  QueryPermissions,
  REQUIRED_PERMISSIONS,
  TASK_TOKEN_ACCESS,
} from '../src/access/route-access.decorators';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Every route and what it requires, as one reviewed list (with what a query value adds, and what a task
 * token may do there): a changed permission shows up as a snapshot diff in review. Also asserts that no
 * route is left without a declaration.
 */
describe('route permission declarations', () => {
  let t: TestApp;
  beforeAll(async () => {
    // The core's own routes: the snapshot is the reviewed record of its declarations, whatever the list adds.
    t = await startTestApp({ core: true });
  });
  afterAll(() => t.close());

  function declarations(): string[] {
    const reflector = t.app.get(Reflector);
    const scanner = new MetadataScanner();
    const lines: string[] = [];
    // Nest's container is the source of truth for what is actually mounted.
    const container = (t.app as unknown as { container: NestContainer }).container;
    const wrappers = [...container.getModules().values()].flatMap((module) => [
      ...module.controllers.values(),
    ]);
    for (const wrapper of wrappers) {
      const controller = wrapper.metatype as new (...args: unknown[]) => unknown;
      const prefix = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, () => unknown>)[name];
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const path = `/${[prefix, String(Reflect.getMetadata(PATH_METADATA, handler) ?? '')]
          .map((part) => part.replace(/^\/|\/$/g, ''))
          .filter(Boolean)
          .join('/')}`;
        const isPublic = reflector.getAllAndOverride<boolean>(IS_PUBLIC, [handler, controller]);
        const required = reflector.getAllAndOverride<string[] | undefined>(REQUIRED_PERMISSIONS, [
          handler,
          controller,
        ]);
        const rule = isPublic
          ? 'public'
          : required === undefined
            ? 'UNDECLARED'
            : required.join(' + ') || 'any credential';
        const byQuery = reflector.get<QueryPermissions | undefined>(QUERY_PERMISSIONS, handler);
        const queryRules = Object.entries(byQuery?.byValue ?? {}).map(
          ([value, permissions]) => ` (${byQuery!.parameter}=${value}: + ${permissions.join(' + ')})`,
        );
        const taskToken = reflector.get<string | undefined>(TASK_TOKEN_ACCESS, handler);
        lines.push(
          `${RequestMethod[method]} ${path} -> ${rule}${queryRules.join('')}${taskToken ? ` (task token: ${taskToken})` : ''}`,
        );
      }
    }
    return lines.sort();
  }

  it('every route declares its permission or is public', () => {
    expect(declarations().filter((line) => line.endsWith('UNDECLARED'))).toEqual([]);
  });

  it('matches the reviewed declarations', () => {
    expect(declarations()).toMatchSnapshot();
  });
});
