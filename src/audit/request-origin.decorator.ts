import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { RequestOrigin } from './audit.service';

export function originOf(request: Request): RequestOrigin {
  const userAgent = request.headers['user-agent'];
  return { ip: request.ip ?? null, userAgent: userAgent ? userAgent.slice(0, 500) : null };
}

/** The caller's address and user agent, for audit entries: `create(@Origin() origin: RequestOrigin)`. */
export const Origin = createParamDecorator((_data: unknown, context: ExecutionContext): RequestOrigin =>
  originOf(context.switchToHttp().getRequest<Request>()),
);
