/** One Server-Sent Events message: its `event` field (null when it names none) and its data lines joined. */
export type ServerSentEventHandler = (event: string | null, data: string) => void;

/**
 * Reads a Server-Sent Events body to its end, handing each message to `onMessage` synchronously, all the
 * messages of a chunk in the turn that chunk was read in; a handler that throws ends the read (and the
 * body) with its error.
 *
 * The providers' SDKs still make the request (headers, the secret as each expects it, HTTP errors as
 * their APIError); only their stream decoders are left out. Measured (bench/llm.bench.ts, "SDK stream
 * decoding"): the openai SDK's decoder takes 7–12 ms for the 1,000 chunks of one answer, 6–9 times a
 * split and JSON.parse, and more than the upstream takes to send them, for an `await` per message; a
 * model's stream is read at the pace the upstream writes it only without that.
 *
 * The WHATWG parsing rules, but for a lone CR as a line end (neither provider sends one): fields
 * `event` and `data` (one leading space taken off), comments and other fields ignored, a blank line
 * ends a message, and a message the body ends inside is dropped.
 */
export async function readServerSentEvents(
  body: ReadableStream<Uint8Array> | null,
  onMessage: ServerSentEventHandler,
): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const message = { event: null as string | null, data: [] as string[] };
  let pending = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      pending = parseLines(pending + decoder.decode(value, { stream: true }), message, onMessage);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    reader.releaseLock();
  }
}

/** Handles every whole line of `text`; returns what is left of a line not ended yet. */
function parseLines(
  text: string,
  message: { event: string | null; data: string[] },
  onMessage: ServerSentEventHandler,
): string {
  let start = 0;
  for (let end = text.indexOf('\n'); end >= 0; start = end + 1, end = text.indexOf('\n', start)) {
    const line =
      text.charCodeAt(end - 1) === 13 && end > start ? text.slice(start, end - 1) : text.slice(start, end);
    if (line === '') {
      if (message.data.length) onMessage(message.event, message.data.join('\n'));
      message.event = null;
      message.data = [];
      continue;
    }
    const colon = line.indexOf(':');
    if (colon === 0) continue;
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') message.data.push(value);
    else if (field === 'event') message.event = value;
  }
  return text.slice(start);
}
