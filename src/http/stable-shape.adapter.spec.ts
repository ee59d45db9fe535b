import { Controller, Get, Head, Header, HttpCode, INestApplication, Module, Post, Res } from '@nestjs/common';
import { AbstractHttpAdapter } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import express, { type Express, type Request, type Response } from 'express';
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

@Controller('answers')
class AnswersController {
  @Get('object')
  object(): unknown {
    return {
      name: 'caf\u00e9 \u2028 \ud83d\ude00',
      quote: '"</script>&',
      n: 1.5,
      list: [1, null, true],
      nested: { a: [] },
    };
  }

  @Get('array')
  array(): unknown {
    return [{ id: 1 }, { id: 2 }];
  }

  @Post('created')
  created(): unknown {
    return { created: true };
  }

  @Get('serialized')
  @Header('Content-Type', 'application/json; charset=utf-8')
  serialized(): string {
    return '{"already":"json"}';
  }

  @Get('text')
  @Header('Content-Type', 'text/plain; charset=utf-8')
  text(): string {
    return 'plain text';
  }

  @Get('string')
  string(): string {
    return 'no type';
  }

  @Get('empty')
  @HttpCode(204)
  empty(): unknown {
    return { ignored: true };
  }

  @Get('nothing')
  nothing(): undefined {
    return undefined;
  }

  @Get('tagged')
  @Header('ETag', '"v1"')
  tagged(): unknown {
    return { tagged: true };
  }

  @Head('object')
  head(): unknown {
    return { name: 'head' };
  }

  @Get('by-hand')
  byHand(@Res() res: Response): void {
    res.json({ by: 'hand' });
  }
}

@Module({ controllers: [AnswersController] })
class AnswersModule {}

interface RawAnswer {
  status: number;
  headers: string[];
  body: string;
}

/** Status, raw header lines (without Date) and body bytes of each request, served through `adapter`. */
async function answers(
  adapter: AbstractHttpAdapter,
  requests: { method: string; path: string; headers?: Record<string, string> }[],
): Promise<RawAnswer[]> {
  const moduleRef = await Test.createTestingModule({ imports: [AnswersModule] }).compile();
  const app: INestApplication = moduleRef.createNestApplication(adapter, { logger: false });
  // As Gatehouse configures Express (app.setup.ts): no ETags.
  (app.getHttpAdapter().getInstance() as Express).set('etag', false);
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as http.Server).address() as AddressInfo;
  try {
    const results: RawAnswer[] = [];
    for (const { method, path, headers } of requests) {
      results.push(
        await new Promise<RawAnswer>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const lines: string[] = [];
              for (let i = 0; i < res.rawHeaders.length; i += 2) {
                if (res.rawHeaders[i] !== 'Date')
                  lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
              }
              resolve({
                status: res.statusCode!,
                headers: lines,
                body: Buffer.concat(chunks).toString('latin1'),
              });
            });
          });
          req.on('error', reject);
          req.end();
        }),
      );
    }
    return results;
  } finally {
    await app.close();
  }
}

describe('StableShapeExpressAdapter.reply', () => {
  it('answers byte for byte as Nest’s ExpressAdapter does, JSON or not', async () => {
    const requests = [
      { method: 'GET', path: '/answers/object' },
      { method: 'GET', path: '/answers/array' },
      { method: 'POST', path: '/answers/created' },
      { method: 'GET', path: '/answers/serialized' },
      { method: 'GET', path: '/answers/text' },
      { method: 'GET', path: '/answers/string' },
      { method: 'GET', path: '/answers/empty' },
      { method: 'GET', path: '/answers/nothing' },
      { method: 'GET', path: '/answers/tagged', headers: { 'if-none-match': '"v1"' } },
      { method: 'HEAD', path: '/answers/object' },
      { method: 'GET', path: '/answers/by-hand' },
    ];
    const send = jest.spyOn(express.response, 'send');
    const ours = await answers(new StableShapeExpressAdapter(), requests);
    // Express's send wrote only what is not a JSON answer: text, string, 204, nothing, ETag, by hand.
    expect(send).toHaveBeenCalledTimes(6);
    send.mockClear();
    const nests = await answers(new ExpressAdapter(), requests);
    expect(send).toHaveBeenCalledTimes(requests.length);
    send.mockRestore();
    expect(ours).toEqual(nests);
    // The cases are what they claim: a JSON body with its length, a 304 from the ETag, a bodiless 204.
    expect(ours[0].headers).toEqual(
      expect.arrayContaining([
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(ours[0].body, 'latin1')}`,
      ]),
    );
    expect(JSON.parse(Buffer.from(ours[0].body, 'latin1').toString('utf8')).name).toBe(
      'caf\u00e9 \u2028 \ud83d\ude00',
    );
    expect(ours.map((answer) => answer.status)).toEqual([
      200, 200, 201, 200, 200, 200, 204, 200, 304, 200, 200,
    ]);
  });
});
