// A Gatehouse http agent in one file: Node 20, no dependencies.
//   PORT=8787 GATEHOUSE_URL=http://localhost:3000 node summarize-agent.mjs
// It "summarises" the task's first attachment (lines and words), reporting progress, output and usage as
// it goes, uploads the summary as a file, and answers with the result.
import { createServer } from 'node:http';

const PORT = Number(process.env.PORT ?? 8787);
const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';

async function run(task, token) {
  // Every call back carries the task's token: it acts for the task's creator, for this task only.
  const gatehouse = async (path, init = {}) => {
    const res = await fetch(`${GATEHOUSE_URL}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...init.headers },
    });
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  const report = (type, data) =>
    gatehouse(`/v1/tasks/${task.task_id}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type, data }),
    });

  await report('progress', { message: 'reading the attachment', percent: 10 });
  const [file] = task.attachments;
  const text = file ? await (await gatehouse(`/v1/files/${file.id}/content`)).text() : '';
  const lines = text.split('\n').filter((line) => line.trim() !== '').length;
  const words = text.split(/\s+/).filter(Boolean).length;

  await report('progress', { message: 'summarising', percent: 50 });
  const deltas = [`${file ? file.filename : 'nothing'}: `, `${lines} lines, `, `${words} words`];
  for (const delta of deltas) await report('output', { delta });
  const summary = deltas.join('');
  // Words in and out stand in for tokens here; usage events add up on the task.
  await report('usage', { input_tokens: words, output_tokens: summary.split(/\s+/).length });

  await report('progress', { message: 'uploading the summary', percent: 90 });
  const form = new FormData();
  const content = `${task.instruction}\n\n${summary}\n`;
  form.append('file', new Blob([content], { type: 'text/plain' }), 'summary.txt');
  const uploaded = await (await gatehouse('/v1/files', { method: 'POST', body: form })).json();
  return { summary, result_file_id: uploaded.id };
}

createServer(async (req, res) => {
  const answer = (status, body) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const token = req.headers['x-gatehouse-task-token'];
  if (req.method !== 'POST' || !token) return answer(404, { error: 'POST a Gatehouse task here' });
  let body = '';
  for await (const chunk of req) body += chunk;
  try {
    // The JSON answer is the task's result; a 5xx answer is retried, a 4xx one fails the task.
    answer(200, await run(JSON.parse(body), token));
  } catch (error) {
    console.error(error);
    answer(500, { error: error.message });
  }
}).listen(PORT, () => console.error(`summarize-agent listening on :${PORT}, calling back ${GATEHOUSE_URL}`));
