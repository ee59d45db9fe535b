import type { Express, Response } from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StableShapeExpressAdapter } from './stable-shape.adapter';
import { responseEnded } from './turn-end-responses';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An Express app served through the adapter's own server (its response class holds ends). */
async function serve(routes: (app: Express) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const adapter = new StableShapeExpressAdapter();
  adapter.initHttpServer({});
  routes(adapter.getInstance<Express>());
  const server = adapter.getHttpServer() as http.Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('responses ended in one turn of the event loop', () => {
  it('leave together at the end of the turn, in the order they were ended', async () => {
    let first: Response | undefined;
    const seen: Record<string, unknown> = {};
    const server = await serve((app) => {
      // The first request waits; the second ends both in one turn.
      app.get('/first', (_req, res) => {
        first = res;
      });
      app.get('/second', (_req, res) => {
        const held = first!;
        // A finished response lets go of its socket: keep them to look at after the turn.
        const sockets = [held.socket!, res.socket!];
        held.send('first answer');
        res.send('second answer');
        seen.writtenAtOnce = sockets.map((socket) => socket.bytesWritten);
        seen.endedAtOnce = [held.writableEnded, res.writableEnded];
        seen.heldAsEnded = [responseEnded(held), responseEnded(res)];
        setImmediate(() => {
          seen.writtenAtTurnEnd = sockets.map((socket) => socket.bytesWritten > 0);
        });
      });
    });
    try {
      const firstAnswer = fetch(`${server.url}/first`).then((res) => res.text());
      while (!first) await nextTurn();
      const secondAnswer = await fetch(`${server.url}/second`).then((res) => res.text());
      expect(await firstAnswer).toBe('first answer');
      expect(secondAnswer).toBe('second answer');
      expect(seen).toEqual({
        writtenAtOnce: [0, 0],
        endedAtOnce: [false, false],
        heldAsEnded: [true, true],
        writtenAtTurnEnd: [true, true],
      });
    } finally {
      await server.close();
    }
  });

  it('abandons a response whose end throws, and still ends the others of its turn', async () => {
    let first: Response | undefined;
    const server = await serve((app) => {
      app.get('/first', (_req, res) => {
        first = res;
      });
      app.get('/second', (_req, res) => {
        // Node throws from `end` when the body does not match a strict Content-Length.
        first!.strictContentLength = true;
        first!.setHeader('Content-Length', '100');
        first!.end('short');
        res.send('second answer');
      });
    });
    try {
      const firstAnswer = fetch(`${server.url}/first`).then(
        (res) => res.text(),
        (error: Error) => `failed: ${error.message}`,
      );
      while (!first) await nextTurn();
      expect(await fetch(`${server.url}/second`).then((res) => res.text())).toBe('second answer');
      expect(await firstAnswer).toMatch(/^failed/);
      expect(first!.destroyed).toBe(true);
    } finally {
      await server.close();
    }
  });
});
