import type { INestApplication } from '@nestjs/common';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OneConnection {
  /** Sends a request on the one kept-alive socket; its status and its JSON body. */
  request(
    method: string,
    path: string,
    headers: http.OutgoingHttpHeaders,
    body?: string,
  ): Promise<{ status: number; body: Record<string, any> }>;
  /** How many sockets the server has accepted so far. */
  sockets(): number;
  close(): void;
}

/**
 * The test app served by a server of its own, with an agent that sends every request on one kept-alive
 * socket: what a per-connection memo (ConnectionHashMemo) sees from a client that keeps its connection.
 */
export async function oneConnection(app: INestApplication): Promise<OneConnection> {
  const server = http.createServer(app.getHttpAdapter().getInstance());
  let sockets = 0;
  server.on('connection', () => sockets++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    request: (method, path, headers, body) =>
      new Promise((resolve, reject) => {
        const req = http.request({ port, host: '127.0.0.1', method, path, agent, headers }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.end(body);
      }),
    sockets: () => sockets,
    close: () => {
      agent.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}
