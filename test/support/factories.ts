import { randomBytes } from 'node:crypto';
import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';

export const uniqueEmail = (label = 'user'): string =>
  `${label}-${randomBytes(6).toString('hex')}@example.test`;

export const PASSWORD = 'correct-horse-battery';

export interface SignedUpOrganization {
  organizationId: string;
  userId: string;
  email: string;
  token: string;
  auth: { Authorization: string };
}

/** A new organization through the public signup, with its administrator's token. */
export async function signUpOrganization(http: TestAgent, name = 'Org'): Promise<SignedUpOrganization> {
  const email = uniqueEmail('admin');
  const res = await http
    .post('/v1/auth/signup')
    .send({
      organization_name: `${name} ${randomBytes(3).toString('hex')}`,
      email,
      password: PASSWORD,
      name: 'Admin',
    })
    .expect(201);
  return {
    organizationId: res.body.organization.id,
    userId: res.body.user.id,
    email,
    token: res.body.access_token,
    auth: { Authorization: `Bearer ${res.body.access_token}` },
  };
}

export interface CreatedUser {
  id: string;
  email: string;
  token: string;
  auth: { Authorization: string };
}

/** A user of the admin's organization with the given role, signed in. */
export async function createUser(
  http: TestAgent,
  admin: { auth: { Authorization: string } },
  role: string,
): Promise<CreatedUser> {
  const email = uniqueEmail(role);
  const created = await http
    .post('/v1/users')
    .set(admin.auth)
    .send({ email, password: PASSWORD, name: `A ${role}`, role })
    .expect(201);
  const token = await signIn(http, email);
  return { id: created.body.id, email, token, auth: { Authorization: `Bearer ${token}` } };
}

/**
 * A sign-in attempt (`POST /v1/auth/token`) from `address`, as a proxy trusted with TRUST_PROXY=1 reports
 * it: the login throttle counts by account and address.
 */
export const signInFrom = (http: TestAgent, address: string, email: string, password: string): Test =>
  http.post('/v1/auth/token').set('X-Forwarded-For', address).send({ email, password });

export async function signIn(http: TestAgent, email: string, password = PASSWORD): Promise<string> {
  const res = await http.post('/v1/auth/token').send({ email, password }).expect(200);
  return res.body.access_token;
}

export const bearer = (token: string): { Authorization: string } => ({ Authorization: `Bearer ${token}` });

/**
 * Asserts an RFC 9457 answer: the status, `application/problem+json`, and a body with non-empty `type`,
 * `title` and `detail`, the same status, the expected `code` (any code when none is given) and the
 * response's own `X-Request-Id`. Returns the body for further checks.
 */
export function expectProblem(
  res: { status: number; headers: Record<string, string>; body: any },
  status: number,
  code?: string,
): { code: string; detail: string; errors?: { field: string; message: string }[] } {
  // Status and code in one comparison, so a failure shows both.
  expect({ status: res.status, code: res.body?.code }).toEqual({ status, code: code ?? res.body?.code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json(;|$)/);
  const requestId = res.headers['x-request-id'];
  expect(requestId).toEqual(expect.any(String));
  expect(res.body).toEqual(
    expect.objectContaining({
      type: expect.stringMatching(/\S/),
      title: expect.stringMatching(/\S/),
      status,
      detail: expect.stringMatching(/\S/),
      code: expect.any(String),
      request_id: requestId,
    }),
  );
  return res.body;
}

/**
 * Sends `body` exactly as given, text or bytes, as `contentType` (JSON unless said): for bodies no client
 * would build. The bytes as they are: supertest would serialise a Buffer as JSON (`{"type":"Buffer",…}`).
 */
export const sendAsIs = (request: Test, body: string | Buffer, contentType = 'application/json'): Test =>
  request
    .set('Content-Type', contentType)
    .serialize((value) => value as string)
    .send(body);

/** Every item of a list endpoint, following `next_cursor` page by page. */
export async function listAll<T = any>(
  http: TestAgent,
  path: string,
  auth: Record<string, string>,
  query: Record<string, string> = {},
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const res: Response = await http
      .get(path)
      .query({ ...query, limit: 100, ...(cursor ? { cursor } : {}) })
      .set(auth)
      .expect(200);
    items.push(...(res.body.data as T[]));
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

/** A list's first page of `limit` items and the page its `next_cursor` (which must be there) leads to. */
export async function firstTwoPages(
  http: TestAgent,
  path: string,
  auth: Record<string, string>,
  limit: number,
): Promise<[first: Response, second: Response]> {
  const first = await http.get(path).query({ limit }).set(auth).expect(200);
  expect(first.body.next_cursor).toEqual(expect.any(String));
  const second = await http.get(path).query({ limit, cursor: first.body.next_cursor }).set(auth).expect(200);
  return [first, second];
}
