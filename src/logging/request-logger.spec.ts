import type { Request, Response } from 'express';
import { Writable } from 'node:stream';
import { createPino } from './logging.module';
import fc from 'fast-check';
import { jsonString, requestLogger } from './request-logger';

/** The app's logger at `level`, writing its JSON lines into `lines` (and as written, into `raw`). */
async function capturedLogger(level: string, lines: Record<string, unknown>[], raw: string[] = []) {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw.push(chunk.toString());
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return createPino({ level, pretty: false } as Parameters<typeof createPino>[0], destination);
}

/** A request and its response; `userAgent` null: the request sent none. */
function exchange(url: string, status: number, userAgent: string | null = 'curl/8') {
  const req = {
    id: 'req_1',
    method: 'GET',
    originalUrl: url,
    headers: {
      'user-agent': userAgent ?? undefined,
      authorization: 'Bearer gh_live_secret',
      'x-api-key': 'gh_live_secret',
    },
  } as unknown as Request;
  return [req, { statusCode: status } as Response] as const;
}

describe('the request log line', () => {
  it('records request id, method, URL without api_key, user agent, status and duration, and no header', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = requestLogger(await capturedLogger('info', lines));
    log(...exchange('/v1/agents?limit=5&api_key=gh_live_secret&x=1', 200), 0.0125);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: {
        id: 'req_1',
        method: 'GET',
        url: '/v1/agents?limit=5&api_key=[REDACTED]&x=1',
        user_agent: 'curl/8',
      },
      res: { status: 200 },
      response_time_ms: 12.5,
    });
    expect(JSON.stringify(lines[0])).not.toContain('gh_live_secret');
  });

  it('logs 4xx as warn and 5xx as error, and nothing below the level', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = requestLogger(await capturedLogger('warn', lines));
    log(...exchange('/v1/agents', 200), 0.001);
    log(...exchange('/v1/agents', 404), 0.001);
    log(...exchange('/v1/agents', 503), 0.001);
    expect(lines.map((line) => [line.level, (line.res as { status: number }).status])).toEqual([
      [40, 404],
      [50, 503],
    ]);
  });

  it("leaves the app's other lines redacted: headers, queries and a failed statement's parameters", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = await capturedLogger('info', lines);
    requestLogger(logger);
    logger.error({
      req: { headers: { authorization: 'Bearer secret', cookie: 'gh_session=secret' } },
      err: { parameters: ['$2b$04$hash'], query: 'INSERT …' },
    });
    expect(JSON.stringify(lines[0])).not.toMatch(/secret|hash|INSERT/);
  });

  it('is the line pino writes for the same fields, made without going through pino', async () => {
    const lines: Record<string, unknown>[] = [];
    const raw: string[] = [];
    const logger = await capturedLogger('info', lines, raw);
    const written = requestLogger(logger);
    // A child of the logger is another logger object: its request logger goes through pino.
    const throughPino = requestLogger(logger.child({}));
    const exchanges = [
      exchange('/v1/agents?limit=5', 200),
      exchange('/v1/a"b\\c?api_key=secret&q=\u00e9\u2028\t', 404, 'Mozilla/5.0 "quoted" \\ \u0001 ünï'),
      exchange('/v1/tasks', 503, null),
    ];
    const durations = [0.0125, 1e-7, 12.25];
    exchanges.forEach((pair, i) => {
      written(...pair, durations[i]);
      throughPino(...pair, durations[i]);
    });
    expect(raw).toHaveLength(6);
    const withoutTime = (line: string) => line.replace(/"time":\d+/, '"time":0');
    for (let i = 0; i < 6; i += 2) {
      expect(withoutTime(raw[i])).toBe(withoutTime(raw[i + 1]));
      expect(lines[i]).toEqual({ ...lines[i + 1], time: lines[i].time });
    }
    expect(lines[4]).not.toHaveProperty('req.user_agent');
    expect(raw.join('')).not.toContain('secret');
  });
});

describe('jsonString', () => {
  it('is JSON.stringify for any string, plain or with quotes, backslashes, controls and surrogates', () => {
    const tricky = fc.constantFrom(
      '"',
      '\\',
      '\u0000',
      '\u001f',
      '\u2028',
      '\ud800',
      '\udfff',
      '\ud83d\ude00',
      'é',
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.array(fc.oneof(fc.string({ maxLength: 3 }), tricky)).map((parts) => parts.join('')),
        ),
        (value) => expect(jsonString(value)).toBe(JSON.stringify(value)),
      ),
      { numRuns: 2000 },
    );
  });
});
