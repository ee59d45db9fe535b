import express from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rememberClientAddressPerConnection } from './client-address';

/** An app answering `request.ip`, with the given trust setting, remembered per connection or not. */
async function ipServer(trust: string | boolean, remember: boolean) {
  const app = express();
  app.set('trust proxy', trust);
  if (remember) rememberClientAddressPerConnection(app);
  app.get('/', (req, res) => {
    // Read twice, as the key check and the audit both do.
    res.json({ ip: req.ip, again: req.ip });
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** Requests on one keep-alive connection, each with its X-Forwarded-For (or none). */
async function askOnOneConnection(server: http.Server, forwardedFor: (string | undefined)[]) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  const answers: unknown[] = [];
  try {
    for (const value of forwardedFor) {
      answers.push(
        await new Promise((resolve, reject) => {
          const headers = value === undefined ? {} : { 'x-forwarded-for': value };
          const port = (server.address() as AddressInfo).port;
          const req = http.get({ port, host: '127.0.0.1', agent, headers }, (res) => {
            sockets.add(res.socket);
            let body = '';
            res.on('data', (chunk) => (body += chunk)).on('end', () => resolve(JSON.parse(body)));
          });
          req.on('error', reject);
        }),
      );
    }
  } finally {
    agent.destroy();
  }
  return { answers, connections: sockets.size };
}

describe('rememberClientAddressPerConnection', () => {
  const servers: http.Server[] = [];
  afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

  it.each([
    ['trusting the loopback proxy', 'loopback'],
    ['trusting no proxy', false],
  ])(
    'answers what Express answers, %s, as X-Forwarded-For changes on one connection',
    async (_name, trust) => {
      const sequence = [undefined, '203.0.113.7', '203.0.113.7', '198.51.100.1, 203.0.113.7', undefined];
      const [remembered, computed] = [await ipServer(trust, true), await ipServer(trust, false)];
      servers.push(remembered, computed);
      const fromMemory = await askOnOneConnection(remembered, sequence);
      const fromExpress = await askOnOneConnection(computed, sequence);
      expect(fromMemory.connections).toBe(1);
      expect(fromMemory.answers).toEqual(fromExpress.answers);
      const ips = fromMemory.answers.map((answer) => (answer as { ip: string }).ip);
      expect(ips).toEqual(
        trust
          ? ['127.0.0.1', '203.0.113.7', '203.0.113.7', '203.0.113.7', '127.0.0.1']
          : Array(5).fill('127.0.0.1'),
      );
    },
  );
});
