import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import http from 'node:http';
import { endAtTurnEnd } from './turn-end-responses';

/**
 * An ExpressAdapter whose server creates every request and response with Express's prototypes already
 * in place.
 *
 * Express gives each request and response its app's prototype with `Object.setPrototypeOf(req,
 * app.request)` (expressjs/express#5998). In V8 an object whose prototype changes after construction
 * leaves the shared hidden class of its kind, so every request had a hidden class of its own and every
 * property access on it (in Node's http, Express, Nest and our code) missed its inline cache (README,
 * "Performance", for what it cost).
 *
 * Node lets a server choose the classes it constructs (`http.createServer({ IncomingMessage,
 * ServerResponse })`), Nest lets an adapter create its server (`initHttpServer`), and Express takes the
 * prototypes it gives requests and responses from `app.request` and `app.response`. Here those become the
 * prototypes of two subclasses of Node's classes, placed above Express's own in the chain; the server
 * constructs its objects from the subclasses, so Express's call finds the prototype already set and
 * changes nothing, and all requests share one hidden class. Nothing of Express or Nest is patched.
 *
 * The response subclass also holds the responses ended in one turn of the event loop and writes them
 * together at its end (turn-end-responses.ts).
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
}
