import { readServerSentEvents } from './server-sent-events';

/** A body that yields these byte chunks, recording whether the reader cancelled it. */
function bodyOf(chunks: (string | Uint8Array)[]): {
  body: ReadableStream<Uint8Array>;
  cancelled: () => boolean;
} {
  let cancelled = false;
  const encoder = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i === chunks.length) return controller.close();
      const chunk = chunks[i++];
      controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
    },
    cancel() {
      cancelled = true;
    },
  });
  return { body, cancelled: () => cancelled };
}

async function messagesOf(chunks: (string | Uint8Array)[]): Promise<[string | null, string][]> {
  const messages: [string | null, string][] = [];
  await readServerSentEvents(bodyOf(chunks).body, (event, data) => messages.push([event, data]));
  return messages;
}

describe('readServerSentEvents', () => {
  it('hands over each message, its event name and data, however the chunks cut the lines', async () => {
    const text =
      'event: message_start\ndata: {"a":1}\n\n: a comment\ndata: {"b":2}\n\nevent: ping\ndata: {}\n\n';
    const whole = await messagesOf([text]);
    expect(whole).toEqual([
      ['message_start', '{"a":1}'],
      [null, '{"b":2}'],
      ['ping', '{}'],
    ]);
    // Every cut of the text in two chunks reads alike.
    for (let cut = 1; cut < text.length; cut++) {
      expect(await messagesOf([text.slice(0, cut), text.slice(cut)])).toEqual(whole);
    }
  });

  it('joins data lines with a newline, takes CRLF line ends, one leading space off, and fields without a colon', async () => {
    expect(await messagesOf(['data:first\r\ndata:  second\r\ndata\r\n\r\nevent\ndata: x\n\n'])).toEqual([
      [null, 'first\n second\n'],
      ['', 'x'],
    ]);
  });

  it('keeps a character whose bytes two chunks split, and drops a message the body ends inside', async () => {
    const bytes = new TextEncoder().encode('data: é€\n\ndata: cut short');
    const euro = bytes.indexOf(0xe2);
    expect(await messagesOf([bytes.slice(0, euro + 1), bytes.slice(euro + 1)])).toEqual([[null, 'é€']]);
  });

  it('ends with the error a handler throws, and cancels the body', async () => {
    const { body, cancelled } = bodyOf(['data: 1\n\n', 'data: 2\n\n', 'data: 3\n\n']);
    const seen: string[] = [];
    await expect(
      readServerSentEvents(body, (_event, data) => {
        seen.push(data);
        if (data === '2') throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(seen).toEqual(['1', '2']);
    expect(cancelled()).toBe(true);
  });

  it('reads nothing from an absent body', async () => {
    const handler = jest.fn();
    await readServerSentEvents(null, handler);
    expect(handler).not.toHaveBeenCalled();
  });
});
