import http from 'node:http';

/**
 * Responses ended during one turn of the event loop are written together, in the check phase right
 * after the poll phase that read their requests: one `setImmediate` a turn, not one a response.
 *
 * Why: a route that answers without waiting (the key check from memory, a public route) used to write
 * its response from inside the socket callback that read the request, so each response was a write of
 * its own while the next requests were still unread. On a loaded loopback that write is where the kernel
 * time goes: it wakes the peer for every response (on this project's virtual machine, most of the
 * server's system time was interrupt enabling under such writes). Responses that waited on Redis or the
 * database already left in bursts, as their answers arrived together, and were cheaper: a key check
 * that spent a credit in PostgreSQL cost less CPU than one that spent nothing. Written together, the
 * synchronous ones cost as little (docs/architecture.md, "Speed-ups, and what each buys", for the measured gain).
 *
 * What changes for the code: `res.end()` returns at once and the response ends (headers formatted,
 * `writableEnded`, the bytes handed to the socket) before the turn is over, in the order the ends were
 * called. Streams written with `res.write` are not held: only the call that ends a response is.
 */
const endNow = http.ServerResponse.prototype.end;

let responses: http.ServerResponse[] = [];
let endArguments: unknown[][] = [];

function endHeldResponses(): void {
  const ending = responses;
  const args = endArguments;
  responses = [];
  endArguments = [];
  for (let i = 0; i < ending.length; i++) {
    try {
      endNow.apply(ending[i], args[i] as Parameters<typeof endNow>);
    } catch (error) {
      // What `end` would have thrown to its caller (a body longer than its Content-Length): that caller
      // is gone, so the response is abandoned rather than the process ended.
      ending[i].destroy(error as Error);
    }
  }
}

/**
 * Whether `response` has ended or is held to end this turn: what `headersSent` says of a response
 * written at once. An error handler asks before answering, so it never writes a second response.
 */
export function responseEnded(response: http.ServerResponse): boolean {
  return response.headersSent || response.writableEnded || responses.includes(response);
}

/** Ends `response` with `args` (those of `res.end`) once this turn's poll phase is over. */
export function endAtTurnEnd(response: http.ServerResponse, args: unknown[]): void {
  if (responses.length === 0) setImmediate(endHeldResponses);
  responses.push(response);
  endArguments.push(args);
}
