import type Redis from 'ioredis';

/**
 * A subscriber only listens: without a question of its own it would never notice a Redis that hangs (a
 * stopped one closes the connection). It is asked PING every `everyMs`; one left unanswered for
 * `deadlineMs` drops the connection (ioredis then reconnects), and 'close' reports the bus deaf,
 * within `everyMs` + `deadlineMs`. The subscriber needs a `disconnectTimeout` of 0: a hung Redis never
 * answers the polite close, and ioredis destroys the socket only after that timeout (2 s by default).
 *
 * The deadline is judged in a setImmediate, after the loop's turn has read its sockets, not in the timer
 * itself (ioredis's socketTimeout does that): on a loaded machine, or in a long garbage collection, the
 * process can be off the CPU past the deadline while the PONG waits in the socket, and the timers phase
 * runs before the poll phase that would read it. A false deafness is not harmless: hearing again clears
 * every key cache, and while PostgreSQL is down a cleared key can only be refused with a 503.
 */
export function watchHearing(subscriber: Redis, everyMs: number, deadlineMs: number): NodeJS.Timeout {
  let unansweredSince: number | undefined;
  const judge = (sentAt: number) => {
    if (unansweredSince !== sentAt || subscriber.status !== 'ready') return;
    unansweredSince = undefined;
    subscriber.disconnect(true);
  };
  const heartbeat = setInterval(() => {
    if (subscriber.status !== 'ready') {
      unansweredSince = undefined;
      return;
    }
    if (unansweredSince === undefined) {
      const sentAt = (unansweredSince = Date.now());
      const answered = () => {
        if (unansweredSince === sentAt) unansweredSince = undefined;
      };
      subscriber.ping().then(answered, answered);
    } else if (Date.now() - unansweredSince >= deadlineMs) {
      setImmediate(judge, unansweredSince);
    }
  }, everyMs);
  heartbeat.unref();
  return heartbeat;
}
