// A stand-in for a model server, for trying llm agents offline: Node 20, no dependencies.
//   PORT=11434 node echo-model.mjs
// It speaks both dialects Gatehouse's llm agents use, streamed as the providers stream them: Chat
// Completions at POST /v1/chat/completions (as Ollama, vLLM and llama.cpp serve it) and Anthropic's
// Messages API at POST /v1/messages. Its "model" answers with the user's message, word by word.
import { createServer } from 'node:http';

const PORT = Number(process.env.PORT ?? 11434);
const send = (res, data, event) =>
  res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

createServer((req, res) => {
  let text = '';
  req.on('data', (chunk) => (text += chunk));
  req.on('end', () => {
    const body = JSON.parse(text || '{}');
    const user = body.messages?.at(-1)?.content ?? '';
    const words = `You said: ${typeof user === 'string' ? user : JSON.stringify(user)}`.split(/(?<= )/);
    const inputTokens = Math.ceil(text.length / 4);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (req.url === '/v1/chat/completions') {
      const chunk = (delta, extra = {}) => ({
        id: 'chatcmpl-echo',
        object: 'chat.completion.chunk',
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: null }],
        ...extra,
      });
      for (const word of words) send(res, chunk({ content: word }));
      send(res, chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }));
      send(
        res,
        chunk({}, { choices: [], usage: { prompt_tokens: inputTokens, completion_tokens: words.length } }),
      );
      return res.end('data: [DONE]\n\n');
    }
    const usage = {
      input_tokens: inputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 1,
    };
    const message = {
      id: 'msg_echo',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      usage,
    };
    send(res, { type: 'message_start', message }, 'message_start');
    send(
      res,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      'content_block_start',
    );
    for (const word of words) {
      send(
        res,
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } },
        'content_block_delta',
      );
    }
    send(res, { type: 'content_block_stop', index: 0 }, 'content_block_stop');
    send(
      res,
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: words.length } },
      'message_delta',
    );
    send(res, { type: 'message_stop' }, 'message_stop');
    res.end();
  });
}).listen(PORT, '127.0.0.1', () => console.error(`echo model on http://127.0.0.1:${PORT}`));
