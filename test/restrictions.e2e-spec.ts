import type { Response, Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey, pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * A key's `allowed_ips` and `allowed_referrers` over HTTP. Requests come from supertest over loopback,
 * so the socket address is 127.0.0.1 (or ::ffff:127.0.0.1). `direct` trusts no proxy: X-Forwarded-For
 * must change nothing. `proxied` runs with TRUST_PROXY=loopback: the loopback peer is a trusted proxy,
 * so the address it appends to X-Forwarded-For is the client, which lets these tests come "from" any
 * IPv4 or IPv6 address.
 */

const verify = (http: TestAgent, auth: Auth, headers: Record<string, string> = {}): Test =>
  http.get('/v1/auth/verify').set({ ...auth, ...headers });

const from = (address: string): Record<string, string> => ({ 'X-Forwarded-For': address });

/** The status of each response, for a compact comparison that shows every answer on failure. */
const statuses = (responses: Response[]): number[] => responses.map((res) => res.status);

let direct: TestApp;
let proxied: TestApp;
let directOrg: SignedUpOrganization;
let proxiedOrg: SignedUpOrganization;

beforeAll(async () => {
  direct = await startTestApp({ env: { AUDIT_DENIAL_WINDOW_SECONDS: '1' } });
  proxied = await startTestApp({ env: { TRUST_PROXY: 'loopback' } });
  directOrg = await signUpOrganization(direct.http, 'Restrictions');
  proxiedOrg = await signUpOrganization(proxied.http, 'Proxied');
});
afterAll(async () => {
  await proxied?.close();
  await direct?.close();
});

describe('allowed_ips without a trusted proxy (TRUST_PROXY unset)', () => {
  it('refuses a key allowed only elsewhere with 403 ip_not_allowed, even when X-Forwarded-For names the allowed address', async () => {
    const { auth } = await createKey(direct.http, directOrg.auth, { allowed_ips: ['203.0.113.7'] });
    expectProblem(await verify(direct.http, auth), 403, 'ip_not_allowed');
    expectProblem(await verify(direct.http, auth, from('203.0.113.7')), 403, 'ip_not_allowed');
    expectProblem(
      await verify(direct.http, auth, { 'X-Forwarded-For': '203.0.113.7', 'X-Real-IP': '203.0.113.7' }),
      403,
      'ip_not_allowed',
    );
  });

  it('accepts a key allowed for the socket address, whatever X-Forwarded-For claims', async () => {
    const { auth, id } = await createKey(direct.http, directOrg.auth, { allowed_ips: ['127.0.0.1'] });
    const plain = await verify(direct.http, auth).expect(200);
    expect(plain.body).toMatchObject({ valid: true, key_id: id });
    await verify(direct.http, auth, from('198.51.100.1')).expect(200);
    await verify(direct.http, auth, from('2001:db9::1')).expect(200);
  });

  it('accepts a CIDR range that contains the socket address and refuses one that does not', async () => {
    const inside = await createKey(direct.http, directOrg.auth, { allowed_ips: ['127.0.0.0/8'] });
    await verify(direct.http, inside.auth).expect(200);
    const outside = await createKey(direct.http, directOrg.auth, {
      allowed_ips: ['10.0.0.0/8', '2001:db8::/32'],
    });
    expectProblem(await verify(direct.http, outside.auth, from('10.1.2.3')), 403, 'ip_not_allowed');
  });

  it('applies a PATCHed allow list at the next request of an already used key', async () => {
    const key = await createKey(direct.http, directOrg.auth);
    await verify(direct.http, key.auth).expect(200);
    await direct.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(directOrg.auth)
      .send({ allowed_ips: ['203.0.113.7'] })
      .expect(200);
    expectProblem(await verify(direct.http, key.auth), 403, 'ip_not_allowed');
    await direct.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(directOrg.auth)
      .send({ allowed_ips: [] })
      .expect(200);
    await verify(direct.http, key.auth).expect(200);
  });
});

describe('allowed_ips behind a trusted proxy (TRUST_PROXY=loopback)', () => {
  let ranges: { auth: Auth };
  let singles: { auth: Auth };

  beforeAll(async () => {
    ranges = await createKey(proxied.http, proxiedOrg.auth, {
      allowed_ips: ['203.0.113.0/24', '2001:db8::/32'],
    });
    singles = await createKey(proxied.http, proxiedOrg.auth, {
      allowed_ips: ['203.0.113.7', '2001:db8::7'],
    });
  });

  it.each([
    ['an IPv4 address inside 203.0.113.0/24', '203.0.113.9'],
    ['the first address of 203.0.113.0/24', '203.0.113.0'],
    ['the last address of 203.0.113.0/24', '203.0.113.255'],
    ['an IPv6 address inside 2001:db8::/32', '2001:db8::5'],
    ['the last address of 2001:db8::/32', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'],
  ])('accepts %s (%s)', async (_label, address) => {
    const res = await verify(proxied.http, ranges.auth, from(address));
    expect(res.status).toBe(200);
  });

  it.each([
    ['an IPv4 address outside the ranges', '198.51.100.1'],
    ['the address just past 203.0.113.0/24', '203.0.114.0'],
    ['an IPv6 address outside 2001:db8::/32', '2001:db9::1'],
    ['the address just before 2001:db8::/32', '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff'],
  ])('refuses %s (%s) with 403 ip_not_allowed', async (_label, address) => {
    expectProblem(await verify(proxied.http, ranges.auth, from(address)), 403, 'ip_not_allowed');
  });

  it('refuses the proxy itself (no X-Forwarded-For): the loopback address is not in the list', async () => {
    expectProblem(await verify(proxied.http, ranges.auth), 403, 'ip_not_allowed');
  });

  it('matches single addresses exactly, IPv4 and IPv6, whatever the IPv6 notation', async () => {
    await verify(proxied.http, singles.auth, from('203.0.113.7')).expect(200);
    await verify(proxied.http, singles.auth, from('2001:db8::7')).expect(200);
    await verify(proxied.http, singles.auth, from('2001:0db8:0000:0000:0000:0000:0000:0007')).expect(200);
    expectProblem(await verify(proxied.http, singles.auth, from('203.0.113.8')), 403, 'ip_not_allowed');
    expectProblem(await verify(proxied.http, singles.auth, from('2001:db8::8')), 403, 'ip_not_allowed');
  });

  it('believes only the hop the trusted proxy added: an allowed address the client prepended is ignored', async () => {
    // The proxy appends the address it saw; whatever came before it is the client's own claim.
    expectProblem(
      await verify(proxied.http, ranges.auth, from('203.0.113.9, 198.51.100.1')),
      403,
      'ip_not_allowed',
    );
    await verify(proxied.http, ranges.auth, from('198.51.100.1, 203.0.113.9')).expect(200);
  });
});

describe('allowed_referrers', () => {
  let key: { auth: Auth };

  beforeAll(async () => {
    key = await createKey(direct.http, directOrg.auth, {
      allowed_referrers: ['https://app.example.com/*', 'https://exact.example.com/page'],
    });
  });

  it.each([
    ['a Referer under the prefix', { Referer: 'https://app.example.com/x' }],
    ['a deep Referer under the prefix', { Referer: 'https://app.example.com/a/b?c=d' }],
    ['an Origin matching the prefix, without Referer', { Origin: 'https://app.example.com' }],
    ['the exact URL as Referer', { Referer: 'https://exact.example.com/page' }],
    [
      'an allowed Referer even when Origin is not allowed (Referer wins)',
      { Referer: 'https://app.example.com/x', Origin: 'https://evil.example.net' },
    ],
  ])('accepts %s', async (_label, headers) => {
    const res = await verify(direct.http, key.auth, headers);
    expect(res.status).toBe(200);
  });

  it.each([
    ['a host that merely starts like the allowed one', { Referer: 'https://app.example.com.evil.net/' }],
    ['an Origin that merely starts like the allowed one', { Origin: 'https://app.example.com.evil.net' }],
    ['another scheme', { Referer: 'http://app.example.com/x' }],
    ['the exact URL with an extra path', { Referer: 'https://exact.example.com/page/more' }],
    ['another page of the exact host', { Referer: 'https://exact.example.com/other' }],
    [
      'a refused Referer even when Origin is allowed (Referer wins)',
      { Referer: 'https://evil.example.net/', Origin: 'https://app.example.com' },
    ],
    ['a Referer that is not a URL', { Referer: 'app.example.com' }],
    ['no Referer and no Origin', {}],
  ])('refuses %s with 403 referrer_not_allowed', async (_label, headers) => {
    expectProblem(await verify(direct.http, key.auth, headers), 403, 'referrer_not_allowed');
  });

  it('leaves a key without allowed_referrers usable without Referer or Origin', async () => {
    const free = await createKey(direct.http, directOrg.auth);
    await verify(direct.http, free.auth).expect(200);
  });
});

describe('order of checks', () => {
  it('refuses a restricted key outside its restriction before looking at its permissions', async () => {
    // A viewer key may not list keys (api_keys:read); from a refused address the answer is still
    // the restriction, not the missing permission.
    const key = await createKey(direct.http, directOrg.auth, {
      role: 'viewer',
      allowed_ips: ['203.0.113.7'],
    });
    expectProblem(await direct.http.get('/v1/api-keys').set(key.auth), 403, 'ip_not_allowed');

    const referred = await createKey(direct.http, directOrg.auth, {
      role: 'viewer',
      allowed_referrers: ['https://app.example.com/*'],
    });
    expectProblem(await direct.http.get('/v1/api-keys').set(referred.auth), 403, 'referrer_not_allowed');

    // Control: once the restriction lets the request through, the missing permission is what refuses it.
    await direct.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(directOrg.auth)
      .send({ allowed_ips: ['127.0.0.1'] })
      .expect(200);
    expectProblem(await direct.http.get('/v1/api-keys').set(key.auth), 403, 'forbidden');
    expectProblem(
      await direct.http.get('/v1/api-keys').set({ ...referred.auth, Referer: 'https://app.example.com/' }),
      403,
      'forbidden',
    );
  });

  it('checks the credential first: a deleted key with a refused address is 401', async () => {
    const key = await createKey(direct.http, directOrg.auth, { allowed_ips: ['203.0.113.7'] });
    await direct.http.delete(`/v1/api-keys/${key.id}`).set(directOrg.auth).expect(204);
    const res = await verify(direct.http, key.auth);
    expect(res.status).toBe(401);
    expect(res.body.code).not.toMatch(/not_allowed/);
  });

  it('spends no rate-limit budget on requests refused by allowed_referrers', async () => {
    const key = await createKey(direct.http, directOrg.auth, {
      allowed_referrers: ['https://app.example.com/*'],
      rate_limit: { requests_per_minute: 3 },
    });
    const refused: Response[] = [];
    for (let i = 0; i < 5; i++) refused.push(await verify(direct.http, key.auth));
    for (const res of refused) expectProblem(res, 403, 'referrer_not_allowed');

    const allowed: Response[] = [];
    for (let i = 0; i < 4; i++) {
      allowed.push(await verify(direct.http, key.auth, { Referer: 'https://app.example.com/app' }));
    }
    expect(statuses(allowed)).toEqual([200, 200, 200, 429]);
    expect(allowed.slice(0, 3).map((res) => res.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);
    expectProblem(allowed[3], 429, 'rate_limited');
  });

  it('spends no rate-limit budget on requests refused by allowed_ips', async () => {
    const key = await createKey(proxied.http, proxiedOrg.auth, {
      allowed_ips: ['203.0.113.7'],
      rate_limit: { requests_per_minute: 3 },
    });
    const refused: Response[] = [];
    for (let i = 0; i < 5; i++) refused.push(await verify(proxied.http, key.auth, from('198.51.100.1')));
    for (const res of refused) expectProblem(res, 403, 'ip_not_allowed');

    const allowed: Response[] = [];
    for (let i = 0; i < 4; i++) allowed.push(await verify(proxied.http, key.auth, from('203.0.113.7')));
    expect(statuses(allowed)).toEqual([200, 200, 200, 429]);
    expectProblem(allowed[3], 429, 'rate_limited');
    // Refusals carry no budget headers either: they never reached the rate limiter.
    expect(refused[0].headers['x-ratelimit-remaining']).toBeUndefined();
  });
});

describe('validation of the rules', () => {
  const invalidIps: [string, unknown][] = [
    ['an octet above 255', ['203.0.113.300']],
    ['an IPv4 prefix above 32', ['10.0.0.0/33']],
    ['an IPv6 prefix above 128', ['2001:db8::/129']],
    ['a negative prefix', ['10.0.0.0/-1']],
    ['an empty prefix', ['10.0.0.0/']],
    ['two prefixes', ['10.0.0.0/8/8']],
    ['a host name', ['localhost']],
    ['an empty string', ['']],
    ['a wildcard', ['10.0.0.*']],
    ['a number', [167772161]],
    ['a string instead of a list', '203.0.113.7'],
    ['one bad entry among good ones', ['203.0.113.7', 'nope', '2001:db8::/32']],
  ];
  const invalidReferrers: [string, unknown][] = [
    ['no scheme', ['app.example.com']],
    ['a relative path', ['/page']],
    ['a non-http scheme', ['ftp://files.example.com/']],
    ['javascript:', ['javascript:alert(1)']],
    ['a wildcard in the host', ['https://*.example.com/']],
    ['a wildcard not at the end', ['https://app.example.com/*/x']],
    ['credentials in the URL', ['https://user:secret@app.example.com/']],
    ['a URL longer than 500 characters', [`https://app.example.com/${'a'.repeat(500)}`]],
    ['a number', [42]],
    ['a string instead of a list', 'https://app.example.com/*'],
  ];

  it.each(invalidIps)('refuses allowed_ips with %s at create (400)', async (_label, value) => {
    const res = await direct.http
      .post('/v1/api-keys')
      .set(directOrg.auth)
      .send({ name: 'bad ips', role: 'viewer', allowed_ips: value });
    const problem = expectProblem(res, 400, 'validation_failed');
    expect(problem.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'allowed_ips' })]),
    );
  });

  it.each(invalidReferrers)('refuses allowed_referrers with %s at create (400)', async (_label, value) => {
    const res = await direct.http
      .post('/v1/api-keys')
      .set(directOrg.auth)
      .send({ name: 'bad referrers', role: 'viewer', allowed_referrers: value });
    const problem = expectProblem(res, 400, 'validation_failed');
    expect(problem.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'allowed_referrers' })]),
    );
  });

  it('refuses invalid rules at PATCH (400) and leaves the key as it was', async () => {
    const key = await createKey(direct.http, directOrg.auth, {
      allowed_ips: ['127.0.0.1'],
      allowed_referrers: ['https://app.example.com/*'],
    });
    for (const [, value] of invalidIps) {
      const res = await direct.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(directOrg.auth)
        .send({ allowed_ips: value });
      expectProblem(res, 400, 'validation_failed');
    }
    for (const [, value] of invalidReferrers) {
      const res = await direct.http
        .patch(`/v1/api-keys/${key.id}`)
        .set(directOrg.auth)
        .send({ allowed_referrers: value });
      expectProblem(res, 400, 'validation_failed');
    }
    const after = await direct.http.get(`/v1/api-keys/${key.id}`).set(directOrg.auth).expect(200);
    expect(after.body).toMatchObject({
      allowed_ips: ['127.0.0.1'],
      allowed_referrers: ['https://app.example.com/*'],
    });
    await verify(direct.http, key.auth, { Referer: 'https://app.example.com/' }).expect(200);
  });

  it('accepts and returns valid rules of every kind', async () => {
    const rules = {
      allowed_ips: ['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', '::1', '0.0.0.0/0'],
      allowed_referrers: ['https://app.example.com/*', 'http://localhost:3000/page'],
    };
    const key = await createKey(direct.http, directOrg.auth, rules);
    expect(key.body).toMatchObject(rules);
    const fetched = await direct.http.get(`/v1/api-keys/${key.id}`).set(directOrg.auth).expect(200);
    expect(fetched.body).toMatchObject(rules);
  });
});

describe('audit of refusals', () => {
  /** Every key.denied entry of the key, all pages. */
  async function denials(keyId: string): Promise<Record<string, any>[]> {
    const res = await direct.http
      .get('/v1/audit-log')
      .query({ action: 'key.denied', key_id: keyId, limit: 100 })
      .set(directOrg.auth)
      .expect(200);
    return res.body.data;
  }
  const countOf = (entries: Record<string, any>[], reason: string): number =>
    entries
      .filter((entry) => entry.details?.reason === reason)
      .reduce((sum, entry) => sum + Number(entry.details.count), 0);

  it('records refusals as key.denied with reason ip_not_allowed / referrer_not_allowed and their count', async () => {
    const key = await createKey(direct.http, directOrg.auth, {
      allowed_ips: ['203.0.113.7'],
    });
    const referred = await createKey(direct.http, directOrg.auth, {
      allowed_referrers: ['https://app.example.com/*'],
    });
    for (let i = 0; i < 3; i++) {
      expectProblem(await verify(direct.http, key.auth, from('203.0.113.7')), 403, 'ip_not_allowed');
    }
    for (let i = 0; i < 2; i++) {
      expectProblem(
        await verify(direct.http, referred.auth, { Referer: 'https://evil.example.net/' }),
        403,
        'referrer_not_allowed',
      );
    }

    // AUDIT_DENIAL_WINDOW_SECONDS=1: the coalesced entries are written once their window closes.
    const ipEntries = await pollUntil(
      () => denials(key.id),
      (entries) => countOf(entries, 'ip_not_allowed') >= 3,
    );
    expect(countOf(ipEntries.value, 'ip_not_allowed')).toBe(3);
    expect(ipEntries.value.every((entry) => entry.details.reason === 'ip_not_allowed')).toBe(true);
    // Three refusals in quick succession fall into one window: one entry, not three.
    expect(ipEntries.value.length).toBeLessThan(3);
    expect(ipEntries.value[0]).toMatchObject({
      action: 'key.denied',
      key_id: key.id,
      actor: { type: 'api_key', id: key.id },
      ip: expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/),
    });

    const referrerEntries = await pollUntil(
      () => denials(referred.id),
      (entries) => countOf(entries, 'referrer_not_allowed') >= 2,
    );
    expect(countOf(referrerEntries.value, 'referrer_not_allowed')).toBe(2);
    expect(referrerEntries.value.every((entry) => entry.details.reason === 'referrer_not_allowed')).toBe(
      true,
    );
    expect(referrerEntries.value[0]).toMatchObject({ actor: { type: 'api_key', id: referred.id } });

    // The key's own audit log shows the same entries, and nothing leaks the key value.
    const own = await direct.http.get(`/v1/api-keys/${key.id}/audit-log`).set(directOrg.auth).expect(200);
    expect(own.body.data.filter((entry: any) => entry.action === 'key.denied')).toHaveLength(
      ipEntries.value.length,
    );
    expect(JSON.stringify(own.body)).not.toContain(key.key);
  });
});
