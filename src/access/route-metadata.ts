import type { ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';

/**
 * Route metadata read through Reflector once per handler and remembered: the guards on every request
 * would otherwise walk reflect-metadata for the same answer each time. Handlers are static, so the
 * cache never goes stale.
 */
export class RouteMetadataCache<T> {
  private readonly byHandler = new WeakMap<object, { value: T | undefined }>();

  constructor(
    private readonly reflector: Reflector,
    private readonly key: string,
  ) {}

  get(context: ExecutionContext): T | undefined {
    const handler = context.getHandler();
    let entry = this.byHandler.get(handler);
    if (!entry) {
      entry = { value: this.reflector.getAllAndOverride<T>(this.key, [handler, context.getClass()]) };
      this.byHandler.set(handler, entry);
    }
    return entry.value;
  }
}
