// An "orders" service that lets a caller in only when Gatehouse says its key may: Node 20, no dependencies.
//   PORT=8788 GATEHOUSE_URL=http://localhost:3000 GATEHOUSE_SERVICE_KEY=sk_… node orders-service.mjs
// Each request's key (Authorization: Bearer …) is checked with POST /v1/keys/verify: the permissions it must
// hold, the credits the call costs, and where the caller came from. GATEHOUSE_SERVICE_KEY is this service's
// own key, holding api_keys:verify (an api_manager key does).
import { createServer } from 'node:http';

const PORT = Number(process.env.PORT ?? 8788);
const GATEHOUSE_URL = process.env.GATEHOUSE_URL ?? 'http://localhost:3000';
const SERVICE_KEY = process.env.GATEHOUSE_SERVICE_KEY;
if (!SERVICE_KEY) throw new Error('set GATEHOUSE_SERVICE_KEY to a key holding api_keys:verify');

const PERMISSIONS = 'agents:read AND (tasks:create OR tasks:execute)';
// What each refusal of the caller's key becomes here.
const STATUS = {
  malformed_key: 401,
  invalid_credentials: 401,
  key_expired: 401,
  key_revoked: 401,
  key_disabled: 401,
  forbidden: 403,
  ip_not_allowed: 403,
  referrer_not_allowed: 403,
  rate_limited: 429,
  credits_exhausted: 429,
  too_many_concurrent_requests: 429,
};
let lastOrder = 1041;

async function verify(req, key) {
  const res = await fetch(`${GATEHOUSE_URL}/v1/keys/verify`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SERVICE_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      key,
      permissions: PERMISSIONS,
      cost: req.method === 'POST' ? 2 : 1, // placing an order costs more than reading one
      ip: req.socket.remoteAddress,
      referrer: req.headers.referer ?? req.headers.origin,
    }),
  });
  // Every outcome of the caller's key is a 200; anything else is this service's own credential or Gatehouse.
  if (res.status !== 200) throw new Error(`verify answered ${res.status}: ${await res.text()}`);
  return res.json();
}

createServer(async (req, res) => {
  const answer = (status, body) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const key = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (!key) return answer(401, { error: 'missing_key' });
  let result;
  try {
    result = await verify(req, key);
  } catch (error) {
    console.error(error);
    return answer(502, { error: 'verification_unavailable' });
  }
  if (!result.valid) return answer(STATUS[result.code] ?? 403, { error: result.code });

  // The caller may: the work itself (a stand-in), for the customer the key belongs to.
  const order =
    req.method === 'POST'
      ? { id: `ord_${++lastOrder}`, status: 'placed' }
      : { id: 'ord_1041', status: 'shipped' };
  answer(200, {
    order,
    customer: result.identity?.external_id ?? null,
    credits_remaining: result.credits_remaining,
  });
}).listen(PORT, () => console.error(`orders-service listening on :${PORT}, verifying with ${GATEHOUSE_URL}`));
