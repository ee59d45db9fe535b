import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request's path (without the query) and its whole body: raw, and parsed as JSON when it is JSON. */
export interface RequestBody {
  path: string;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

/**
 * What the tests' stand-ins for remote servers (fake agents, webhook receivers) share: a node:http server
 * whose handler is called once a request's body has arrived, on 127.0.0.1 and a random port.
 */
export function createBodyServer(
  handle: (req: IncomingMessage, res: ServerResponse, body: RequestBody) => void,
): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      handle(req, res, { path: (req.url ?? '/').split('?')[0], text, json });
    });
  });
}

/** Starts `server` listening on 127.0.0.1 and a random port; returns the port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Stops `server`, dropping the connections still open. */
export async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
