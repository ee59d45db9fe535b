import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { AbstractHttpAdapter } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import type { Request } from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { StableShapeExpressAdapter } from './stable-shape.adapter';

// V8's own answer to "do these two objects share a hidden class": a natives-syntax intrinsic, which
// needs the flag before the function using it is compiled.
setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b);') as (a: object, b: object) => boolean;

@Controller()
class PingController {
  @Get('ping')
  ping(): { ok: boolean } {
    return { ok: true };
  }
}

@Module({ controllers: [PingController] })
class PingModule {}

/** Serves two requests and hands back the request and response objects Express saw. */
async function twoRequests(adapter: AbstractHttpAdapter): Promise<[Request, http.ServerResponse][]> {
  const moduleRef = await Test.createTestingModule({ imports: [PingModule] }).compile();
  const app: INestApplication = moduleRef.createNestApplication(adapter, { logger: false });
  const seen: [Request, http.ServerResponse][] = [];
  app.use((req: Request, res: http.ServerResponse, next: () => void) => {
    seen.push([req, res]);
    next();
  });
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as http.Server).address() as AddressInfo;
  try {
    for (let i = 0; i < 2; i++) {
      const body = await fetch(`http://127.0.0.1:${port}/ping`).then((res) => res.json());
      expect(body).toEqual({ ok: true });
    }
  } finally {
    await app.close();
  }
  return seen;
}

describe('StableShapeExpressAdapter', () => {
  it('gives every request and response one hidden class, with Express’s prototypes', async () => {
    const [[req1, res1], [req2, res2]] = await twoRequests(new StableShapeExpressAdapter());
    expect(haveSameMap(req1, req2)).toBe(true);
    expect(haveSameMap(res1, res2)).toBe(true);
    // Still Node's objects under Express's prototypes: nothing of either is lost.
    expect(req1).toBeInstanceOf(http.IncomingMessage);
    expect(res1).toBeInstanceOf(http.ServerResponse);
    expect(typeof req1.get).toBe('function');
    expect(Object.getPrototypeOf(req1)).toBe(Object.getPrototypeOf(req2));
  });

  it('is needed: with Nest’s default adapter, requests do not share one', async () => {
    const [[req1, res1], [req2, res2]] = await twoRequests(new ExpressAdapter());
    expect(haveSameMap(req1, req2)).toBe(false);
    expect(haveSameMap(res1, res2)).toBe(false);
  });
});
