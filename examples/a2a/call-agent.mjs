// Calls a Gatehouse agent from another agent over A2A, with the official JS SDK's client:
//   GATEHOUSE_URL=http://localhost:3000 KEY=gh_… AGENT_ID=agt_… node examples/a2a/call-agent.mjs "instruction"
// It reads the agent's card, sends the instruction and waits for the task's end (SendMessage), then sends
// it again as a stream (SendStreamingMessage) and prints each event as it comes.
import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

const { GATEHOUSE_URL, KEY, AGENT_ID } = process.env;
if (!GATEHOUSE_URL || !KEY || !AGENT_ID) {
  console.error('set GATEHOUSE_URL, KEY and AGENT_ID');
  process.exit(2);
}
const instruction = process.argv[2] ?? 'Hello from another agent';
const say = (line) => process.stdout.write(`${line}\n`);

// Every call carries the API key as a bearer credential (the card's "bearer" scheme).
const withKey = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('Authorization', `Bearer ${KEY}`);
  return fetch(input, { ...init, headers });
};
const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: withKey })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: withKey }),
});
// The card's own URL (its path is the agent's, not the host's /.well-known/…).
const client = await factory.createFromUrl(
  `${GATEHOUSE_URL}/a2a/${AGENT_ID}/.well-known/agent-card.json`,
  '',
);
const card = await client.getAgentCard();
say(`agent: ${card.name} (A2A ${client.protocolVersion})`);

const message = () => ({
  tenant: '',
  message: {
    messageId: randomUUID(),
    contextId: 'docs-conversation',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: instruction }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: { 'gatehouse/max_credits': 10 },
});

const task = await client.sendMessage(message());
const result = task.artifacts.find((artifact) => artifact.artifactId === 'result');
say(
  `task ${task.id}: ${TaskState[task.status.state]}, result ${JSON.stringify(result?.parts[0].content.value)}`,
);

for await (const event of client.sendMessageStream(message())) {
  const { $case, value } = event.payload;
  if ($case === 'task') say(`stream: task ${value.id} ${TaskState[value.status.state]}`);
  if ($case === 'statusUpdate') say(`stream: status ${TaskState[value.status.state]}`);
  if ($case === 'artifactUpdate') say(`stream: artifact ${value.artifact.artifactId}`);
}

const listed = await client.listTasks({
  tenant: '',
  contextId: 'docs-conversation',
  status: 0,
  pageToken: '',
  statusTimestampAfter: undefined,
});
say(`conversation docs-conversation: ${listed.tasks.length} tasks`);
