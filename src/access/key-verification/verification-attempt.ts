import type { ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { VerifyKeyDto } from '../../api-keys/dto/verify-key.dto';
import type { PermissionQuery } from '../../api-keys/verification/permission-query';
import type { AccessAttempt } from '../access-attempt';
import { KeyCheck } from '../key-check';
import type { Principal } from '../principal';

/**
 * The attempt POST /v1/keys/verify puts through the key check: the request the calling service received,
 * as far as the body describes it. Its `request` carries what the steps read of a request (the address
 * and referrer the restrictions check) and what they leave on it (the verified key's `principal`, the
 * credits spent); no method, route or header of the service's own call, which describe the caller.
 * `response` is the verify call's: the verified key holds its slot in flight until the answer is sent.
 */
export function verificationAttempt(
  caller: Principal,
  body: VerifyKeyDto,
  permissions: PermissionQuery | null,
  cost: number,
  response: Response,
  connection: object,
): AccessAttempt {
  const request = {
    ip: body.ip,
    headers: body.referrer === undefined ? {} : { referer: body.referrer },
  } as unknown as Request;
  return {
    context: describedContext(request),
    request,
    response,
    verification: { organizationId: caller.organizationId, key: body.key, permissions, cost, connection },
  };
}

/** The response of the described request: its budget headers go nowhere (they are the caller's to get). */
const NO_HEADERS = { setHeader: () => NO_HEADERS } as unknown as Response;

/**
 * An HTTP execution context around the described request, for the steps that take one (the rate-limit
 * windows resolve their limits from its request's key). It names no handler of this API: no route's
 * metadata applies to another service's request.
 */
function describedContext(request: Request): ExecutionContext {
  const args = [request, NO_HEADERS];
  const http = { getRequest: () => request, getResponse: () => NO_HEADERS, getNext: () => undefined };
  return {
    getClass: () => KeyCheck,
    getHandler: () => verificationAttempt,
    getArgs: () => args,
    getArgByIndex: (index: number) => args[index],
    switchToHttp: () => http,
    switchToRpc: () => {
      throw new Error('the key check of a verification describes an HTTP request');
    },
    switchToWs: () => {
      throw new Error('the key check of a verification describes an HTTP request');
    },
    getType: () => 'http',
  } as unknown as ExecutionContext;
}
