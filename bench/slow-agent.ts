/**
 * The stand-in for a real agent in bench:tasks, in a process of its own (so that it neither slows the
 * bench's clients nor is slowed by them): a node:http server on loopback that answers every request
 * after BENCH_AGENT_DELAY_MS with a small JSON body. Over IPC it says `ready` with its URL, and answers
 * `peak` with the most requests it held open at once since the last `peak`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const DELAY_MS = Number(process.env.BENCH_AGENT_DELAY_MS ?? 500);

let open = 0;
let peak = 0;
const server = createServer((req, res) => {
  open++;
  peak = Math.max(peak, open);
  req.resume();
  req.on('end', () => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"answer":"done"}');
    }, DELAY_MS);
  });
  res.on('close', () => open--);
});
server.keepAliveTimeout = 60_000;

process.on('message', (message: { type: string }) => {
  if (message.type === 'peak') {
    process.send!({ type: 'peak', peak });
    peak = open;
  }
  if (message.type === 'exit') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.send!({ type: 'ready', url: `http://127.0.0.1:${port}/run` });
});
