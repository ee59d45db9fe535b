import { StreamableFile, type NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Response } from 'express';
import http from 'node:http';
import { endAtTurnEnd } from './turn-end-responses';

/** The Content-Type Express's `json` ends up writing. */
const JSON_UTF8 = 'application/json; charset=utf-8';

/**
 * An ExpressAdapter whose server creates every request and response with Express's prototypes already
 * in place.
 *
 * Express gives each request and response its app's prototype with `Object.setPrototypeOf(req,
 * app.request)` (expressjs/express#5998). In V8 an object whose prototype changes after construction
 * leaves the shared hidden class of its kind, so every request had a hidden class of its own and every
 * property access on it (in Node's http, Express, Nest and our code) missed its inline cache (docs/architecture.md,
 * "Speed-ups, and what each buys", for what it cost).
 *
 * Node lets a server choose the classes it constructs (`http.createServer({ IncomingMessage,
 * ServerResponse })`), Nest lets an adapter create its server (`initHttpServer`), and Express takes the
 * prototypes it gives requests and responses from `app.request` and `app.response`. Here those become the
 * prototypes of two subclasses of Node's classes, placed above Express's own in the chain; the server
 * constructs its objects from the subclasses, so Express's call finds the prototype already set and
 * changes nothing, and all requests share one hidden class. Nothing of Express or Nest is patched.
 *
 * The response subclass also holds the responses ended in one turn of the event loop and writes them
 * together at its end (turn-end-responses.ts), and `reply` writes a JSON answer without Express's
 * content-type round trip (below).
 */
export class StableShapeExpressAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    // HTTPS and force-closed connections keep Nest's own server: neither is used here, and the adapter's
    // connection tracking is not public.
    if (options?.httpsOptions || options?.forceCloseConnections) return super.initHttpServer(options);
    const app = this.getInstance<Express>();
    class StableRequest extends http.IncomingMessage {}
    class StableResponse extends http.ServerResponse {
      // Responses of one turn leave together (turn-end-responses.ts).
      override end(...args: unknown[]): this {
        endAtTurnEnd(this, args);
        return this;
      }
    }
    // Express's request and response prototypes (with everything an app added to them) stay in the
    // chain, between the subclass and Node's own prototype.
    Object.setPrototypeOf(StableRequest.prototype, app.request);
    Object.setPrototypeOf(StableResponse.prototype, app.response);
    app.request = StableRequest.prototype as Express['request'];
    app.response = StableResponse.prototype as unknown as Express['response'];
    this.setHttpServer(
      http.createServer({ IncomingMessage: StableRequest, ServerResponse: StableResponse }, app),
    );
  }

  /**
   * What Nest does with a handler's JSON answer (`response.json(body)`, or `send` for a body already
   * serialized), with the same bytes on the wire and without what Express spends finding them: `json`
   * sets `application/json` through mime-types, `send` parses that back with content-type to add the
   * charset it already has and formats it again (about 10% of a public route's CPU in a profile). Anything
   * else, and any app setting that would change the bytes (an ETag function, JSON replacer, spaces or
   * escaping), takes Nest's own path. stable-shape.adapter.spec.ts compares the answers byte for byte.
   */
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    if (statusCode) response.status(statusCode);
    const text = this.jsonText(response, body);
    if (text === undefined) return super.reply(response, body);
    response.setHeader('Content-Length', Buffer.byteLength(text));
    if (response.req.method === 'HEAD') response.end();
    else response.end(text, 'utf8');
    return response;
  }

  /** The body to write as JSON directly, with its Content-Type set; undefined: Express decides. */
  private jsonText(response: Response, body: unknown): string | undefined {
    const status = response.statusCode;
    // Express empties these bodies, and may turn a fresh answer into a 304 (only with these headers).
    if (status === 204 || status === 205 || status === 304) return undefined;
    if (response.getHeader('ETag') !== undefined || response.getHeader('Last-Modified') !== undefined) {
      return undefined;
    }
    const app = this.getInstance<Express>();
    if (
      typeof app.get('etag fn') === 'function' ||
      app.get('json replacer') ||
      app.get('json spaces') ||
      app.get('json escape')
    ) {
      return undefined;
    }
    const type = response.getHeader('Content-Type');
    // Serialized already, under the exact type `send` would write (setCharset leaves it as it is).
    if (typeof body === 'string') return type === JSON_UTF8 ? body : undefined;
    if (
      type !== undefined ||
      body === null ||
      typeof body !== 'object' ||
      body instanceof StreamableFile ||
      body instanceof Error ||
      ArrayBuffer.isView(body)
    ) {
      return undefined;
    }
    const text = JSON.stringify(body) as string | undefined;
    if (text === undefined) return undefined;
    response.setHeader('Content-Type', JSON_UTF8);
    return text;
  }
}
