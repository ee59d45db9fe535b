import express, { type NextFunction, type Request, type Response } from 'express';
import fc from 'fast-check';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { bodyParsers } from './body-parsers';

const LIMIT = 4096;

/** What an app made of the body: the parsed value and the raw bytes kept, or the error's code. */
type Outcome = { body: unknown; raw: string | null } | { error: string };

/** An app that answers what `bodyParsers` made of each POST, and records the errors it passed on. */
function app(direct: boolean): { server: http.Server; errors: string[] } {
  const errors: string[] = [];
  const api = express();
  api.use(bodyParsers(LIMIT, { direct }));
  api.post('/echo', (req: Request & { rawBody?: Buffer }, res: Response) => {
    res.json({ body: req.body ?? null, raw: req.rawBody?.toString('base64') ?? null });
  });
  api.use((error: { code?: string; message?: string }, _req: Request, res: Response, _next: NextFunction) => {
    const code = error.code ?? `not a problem: ${error.message}`;
    errors.push(code);
    res.json({ error: code });
  });
  return { server: http.createServer(api), errors };
}

function post(server: http.Server, type: string, body: Buffer): Promise<Outcome> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        port,
        method: 'POST',
        path: '/echo',
        headers: { 'content-type': type, 'content-length': body.length },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(JSON.parse(text) as Outcome));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('bodyParsers: a plain JSON body read directly', () => {
  const direct = app(true);
  const parser = app(false);
  beforeAll(async () => {
    for (const { server } of [direct, parser])
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    for (const { server } of [direct, parser]) server.close();
  });

  // JSON texts, then what a hostile or careless client makes of them: a byte order mark, leading
  // whitespace, a cut, bytes that are not UTF-8, a reserved key, a lone surrogate escape, no object at all.
  const texts = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
    fc.constantFrom(
      '',
      ' ',
      '{}',
      '[]',
      '\n\t {"a":1}',
      '{"__proto__":{}}',
      '"\\ud800"',
      '{"a":"\\ud800"}',
      '1',
      'null',
    ),
    fc.string({ maxLength: 40 }),
  );
  const bodies = fc
    .tuple(
      texts,
      fc.boolean(),
      fc.constantFrom('', ' ', '\r\n', '\t'),
      fc.option(fc.nat(), { nil: undefined }),
      fc.option(fc.constantFrom(0xff, 0xc3, 0x00, 0x22), { nil: undefined }),
    )
    .map(([text, bom, space, cut, byte]) => {
      let bytes = Buffer.from(space + text, 'utf8');
      if (cut !== undefined && bytes.length) bytes = bytes.subarray(0, cut % bytes.length);
      if (byte !== undefined) bytes = Buffer.concat([bytes, Buffer.from([byte])]);
      return bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) : bytes;
    });

  it('answers every body as body-parser does, under both type spellings it takes', async () => {
    await fc.assert(
      fc.asyncProperty(
        bodies,
        fc.constantFrom('application/json', 'application/json; charset=utf-8'),
        async (body, type) => {
          expect(await post(direct.server, type, body)).toEqual(await post(parser.server, type, body));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('passes on a body cut off by the client as request_aborted, as body-parser does', async () => {
    for (const { server, errors } of [direct, parser]) {
      errors.length = 0;
      const { port } = server.address() as AddressInfo;
      const request = http.request({
        port,
        method: 'POST',
        path: '/echo',
        headers: { 'content-type': 'application/json', 'content-length': 100 },
      });
      request.on('error', () => undefined);
      request.write('{"key":');
      await new Promise((resolve) => setTimeout(resolve, 50));
      request.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(errors).toEqual(['request_aborted']);
    }
  });
});
