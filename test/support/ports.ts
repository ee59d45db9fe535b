import { once } from 'node:events';
import { createServer } from 'node:net';

/** A free TCP port on loopback, as the kernel hands one out. */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
