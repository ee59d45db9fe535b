import { signUpOrganization } from './support/factories';
import { startTestApp, TestApp } from './support/test-app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('signs up and lists users', async () => {
    const org = await signUpOrganization(t.http);
    const res = await t.http.get('/v1/users').set(org.auth).expect(200);
    expect(res.body.data.map((u: { id: string }) => u.id)).toEqual([org.userId]);
  });
});
