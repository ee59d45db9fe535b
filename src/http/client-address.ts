import type { Express, Request } from 'express';
import type { Socket } from 'node:net';

/**
 * `request.ip` remembered per connection. Express computes it on every read (proxy-addr parses
 * X-Forwarded-For and tests each hop against the `trust proxy` function), and the key check reads it on
 * every request. The answer depends only on the connection's address, that header and the trust
 * setting, which is fixed at start (app.setup.ts): a keep-alive connection's later requests with the
 * same header are answered from memory, and a request with another value (a proxy's connection carries
 * many clients) is computed anew. Defined on `app.request`, Express's public place for request
 * properties; Express's own getter does the computing.
 */
export function rememberClientAddressPerConnection(app: Express): void {
  const computeIp = expressGetter(app.request, 'ip');
  const remembered = new WeakMap<Socket, { forwardedFor: unknown; ip: string | undefined }>();
  Object.defineProperty(app.request, 'ip', {
    configurable: true,
    enumerable: true,
    get(this: Request): string | undefined {
      const forwardedFor = this.headers['x-forwarded-for'];
      const known = remembered.get(this.socket);
      if (known && known.forwardedFor === forwardedFor) return known.ip;
      const ip = computeIp.call(this) as string | undefined;
      remembered.set(this.socket, { forwardedFor, ip });
      return ip;
    },
  });
}

function expressGetter(prototype: object, name: string): () => unknown {
  for (let level: object | null = prototype; level; level = Object.getPrototypeOf(level)) {
    const getter = Object.getOwnPropertyDescriptor(level, name)?.get;
    if (getter) return getter;
  }
  throw new Error(`Express's request has no getter "${name}"`);
}
