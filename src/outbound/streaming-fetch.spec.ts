import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SafeHttpClient } from './safe-http-client';

const MANY = 500;
const client = (allowPrivateNetworkTargets: boolean, timeoutMs = 5000) =>
  new SafeHttpClient({ allowPrivateNetworkTargets, timeoutMs });

/** SafeHttpClient.streamingFetch: a fetch the providers' SDKs take, under the outbound policy. */
describe('SafeHttpClient.streamingFetch', () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/redirect') return res.writeHead(302, { location: 'http://127.0.0.1/' }).end();
      if (req.url === '/silent') return res.writeHead(200).write('first');
      if (req.url === '/big') return res.end('x'.repeat(2000));
      if (req.url === '/many') {
        // 500 chunks of a chunked body in one write to the socket, as a fast model's tokens arrive.
        res.writeHead(200);
        res.socket!.cork();
        for (let i = 0; i < MANY; i++) res.write(`data: ${i}\n\n`);
        res.socket!.uncork();
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-echo': req.headers['x-token'] ?? '' });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: 2\n\n'), 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('streams the body as it arrives, with the status and headers', async () => {
    const response = await client(true).streamingFetch()(`${base}/stream`, {
      method: 'POST',
      headers: { 'x-token': 'abc' },
      body: '{}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-echo')).toBe('abc');
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).toBe('data: 1\n\n');
    let rest = '';
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      rest += Buffer.from(next.value).toString();
    }
    expect(rest).toBe('data: 2\n\n');
  });

  it('hands the chunks of one socket read to the reader together, all of them and in order', async () => {
    const response = await client(true).streamingFetch()(`${base}/many`);
    const reader = response.body!.getReader();
    let text = '';
    let reads = 0;
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      reads++;
      text += Buffer.from(next.value).toString();
    }
    expect(text).toBe(Array.from({ length: MANY }, (_, i) => `data: ${i}\n\n`).join(''));
    // One read per chunk would be MANY reads, each a promise and a turn of the reader's loop.
    expect(reads).toBeLessThan(MANY);
  });

  it('refuses a private target unless allowed, and redirects', async () => {
    await expect(client(false).streamingFetch()(`${base}/stream`)).rejects.toMatchObject({
      code: 'target_not_allowed',
    });
    await expect(client(true).streamingFetch()(`${base}/redirect`)).rejects.toMatchObject({
      code: 'redirect_not_followed',
    });
  });

  it('bounds the silence and the whole body', async () => {
    const silent = await client(true).streamingFetch({ idleTimeoutMs: 200 })(`${base}/silent`);
    await expect(silent.text()).rejects.toMatchObject({ code: 'timeout' });
    const big = await client(true).streamingFetch({ maxBytes: 1000 })(`${base}/big`);
    await expect(big.text()).rejects.toMatchObject({ code: 'response_too_large' });
  });

  it('aborts with the signal', async () => {
    const controller = new AbortController();
    const silent = await client(true).streamingFetch()(`${base}/silent`, { signal: controller.signal });
    const reading = silent.text();
    controller.abort();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
  });
});
