/** Where the A2A agents are served: `/a2a/{agent_id}`, the OAuth resource `<PUBLIC_URL>/a2a`. */
export const A2A_PATH = '/a2a';

/** Whether a request's URL is one of an A2A agent's (its JSON-RPC endpoint or its agent card). */
export function isA2aRequest(url: string): boolean {
  return url.length > A2A_PATH.length && url.slice(0, A2A_PATH.length + 1).toLowerCase() === `${A2A_PATH}/`;
}
