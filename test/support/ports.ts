import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports are drawn from below the kernel's ephemeral range, never with `listen(0)`: a port the kernel hands out
 * and takes back is soon the local port of some outgoing connection (a pool's to PostgreSQL or Redis), and a
 * server told to listen there then fails with EADDRINUSE. Ports below the range are never given to outgoing
 * connections. Each Jest worker draws from a slice of its own, so two workers never pick the same port.
 */
const LOWEST_PORT = 10_000;
const WORKER_SLICES = 16;

function firstEphemeralPort(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > LOWEST_PORT + WORKER_SLICES * 100) return low;
  } catch {
    // Not Linux: the range most kernels use by default.
  }
  return 32_768;
}

const sliceSize = Math.floor((firstEphemeralPort() - LOWEST_PORT) / WORKER_SLICES);
const worker = (Number(process.env.JEST_WORKER_ID) || 1) % WORKER_SLICES;
const sliceStart = LOWEST_PORT + worker * sliceSize;
// Two test processes with the same worker id (two projects at once) start at different places in the slice.
let next = Math.floor(Math.random() * sliceSize);

async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  const listening = await Promise.race([
    once(server, 'listening').then(() => true),
    once(server, 'error').then(() => false),
  ]);
  if (listening) {
    server.close();
    await once(server, 'close');
  }
  return listening;
}

/** A TCP port on loopback that nothing listens on and no outgoing connection can take from under the test. */
export async function freeLoopbackPort(): Promise<number> {
  for (let tried = 0; tried < sliceSize; tried++) {
    const port = sliceStart + (next++ % sliceSize);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free loopback port in ${sliceStart}..${sliceStart + sliceSize - 1}`);
}
