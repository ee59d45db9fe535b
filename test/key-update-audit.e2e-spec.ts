import { signUpOrganization, SignedUpOrganization } from './support/factories';
import { createKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

type Json = Record<string, any>;

/**
 * A key.updated audit entry carries each changed setting before and after (`changes: {<field>: {from,
 * to}}`, as organization.policies_updated does), besides the names of the fields the request set: the
 * dashboard's audit log shows them as before → after. A field set to the value it had is named but not
 * in `changes`; credits (a balance that moves with every request) are named only.
 */
describe('key.updated: before and after', () => {
  let t: TestApp;
  let org: SignedUpOrganization;

  beforeAll(async () => {
    t = await startTestApp();
    org = await signUpOrganization(t.http, 'Key changes');
  });

  afterAll(async () => {
    await t?.close();
  });

  const lastUpdate = async (keyId: string): Promise<Json> => {
    const res = await t.http
      .get(`/v1/api-keys/${keyId}/audit-log`)
      .query({ action: 'key.updated' })
      .set(org.auth)
      .expect(200);
    return res.body.data[0];
  };

  it('records each changed setting as the key object shows it, before and after', async () => {
    const key = await createKey(t.http, org.auth, {
      name: 'before',
      role: 'viewer',
      allowed_ips: ['10.0.0.1'],
    });
    await t.http
      .patch(`/v1/api-keys/${key.id}`)
      .set(org.auth)
      .send({
        name: 'after',
        role: 'developer',
        allowed_ips: ['10.0.0.1'],
        rate_limit: { requests_per_minute: 60 },
        meta: { plan: 'pro' },
        credits: { remaining: 10 },
      })
      .expect(200);
    const entry = await lastUpdate(key.id);
    expect(entry.details).toEqual({
      fields: ['allowed_ips', 'credits', 'meta', 'name', 'rate_limit', 'role'],
      changes: {
        name: { from: 'before', to: 'after' },
        role: { from: 'viewer', to: 'developer' },
        rate_limit: {
          from: { requests_per_minute: null, requests_per_hour: null },
          to: { requests_per_minute: 60, requests_per_hour: null },
        },
        meta: { from: {}, to: { plan: 'pro' } },
      },
    });
  });

  it('names an identity by id before and after, and leaves `changes` out when nothing changed', async () => {
    const identity = (
      await t.http.post('/v1/identities').set(org.auth).send({ external_id: 'acme-changes' }).expect(201)
    ).body;
    const key = await createKey(t.http, org.auth, { name: 'attached', role: 'viewer' });
    await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ identity_id: identity.id }).expect(200);
    expect((await lastUpdate(key.id)).details.changes).toEqual({
      identity_id: { from: null, to: identity.id },
    });

    await t.http.patch(`/v1/api-keys/${key.id}`).set(org.auth).send({ name: 'attached' }).expect(200);
    expect((await lastUpdate(key.id)).details).toEqual({ fields: ['name'] });
  });
});
