import { Injectable, Module } from '@nestjs/common';
import type { AccessAttempt, AccessStep, StepOutcome } from '../src/access/access-attempt';
import { ACCESS_STEPS, AccessStepName } from '../src/access/key-check';
import { AccessDenial, AccessDenialCode } from '../src/access/access-denial';
import { AccessPolicies, AccessPolicy } from '../src/access/access-policy';
import { ConcurrencyStep } from '../src/access/steps/concurrency.step';
import { CredentialStep } from '../src/access/steps/credential.step';
import { CreditsStep } from '../src/access/steps/credits.step';
import { PermissionStep } from '../src/access/steps/permission.step';
import { RateLimitStep } from '../src/access/steps/rate-limit.step';
import { RestrictionsStep } from '../src/access/steps/restrictions.step';
import { expectProblem, signUpOrganization, SignedUpOrganization } from './support/factories';
import { Auth, createKey } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The key check runs what access-check.ts declares: every step's `check` is recorded as it runs for a
 * real request through the real guards, and the running order must be ACCESS_STEPS; policies run in
 * their declared positions (order, then class name), whatever order their module lists them in.
 */

/** What ran for the current request, in order. */
const ran: string[] = [];
const refusing = { by: '' };

abstract class ProbePolicy implements AccessStep {
  check(): StepOutcome | Promise<StepOutcome> {
    ran.push(this.constructor.name);
    if (refusing.by !== this.constructor.name) return undefined;
    return new AccessDenial(AccessDenialCode.Forbidden, 'Refused by a probe policy.');
  }
}

// Listed below latest first: the declared order, not the module's, decides.
@AccessPolicy({ order: 20 })
@Injectable()
class LateProbe extends ProbePolicy {}

@AccessPolicy({ order: 10 })
@Injectable()
class ZuluProbe extends ProbePolicy {}

@AccessPolicy({ order: 10 })
@Injectable()
class AlphaProbe extends ProbePolicy {
  // A policy may answer later, too: the steps after it still wait for it.
  override check(): Promise<StepOutcome> {
    const outcome = super.check();
    return new Promise((resolve) => setImmediate(() => resolve(outcome)));
  }
}

@Module({ providers: [LateProbe, ZuluProbe, AlphaProbe] })
class ProbesModule {}

/**
 * Each built-in step by its class, written out here rather than taken from AccessModule's registry
 * (STEP_PROVIDERS), which is under test: labelled by the registry itself, a step registered under
 * another step's name would still be recorded under the expected name.
 */
const STEP_CLASSES: Record<AccessStepName, abstract new (...args: never[]) => AccessStep> = {
  credential: CredentialStep,
  restrictions: RestrictionsStep,
  permission: PermissionStep,
  policies: AccessPolicies,
  rate_limit: RateLimitStep,
  credits: CreditsStep,
  concurrency: ConcurrencyStep,
};

describe('the key check runs in the declared order', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  beforeAll(async () => {
    t = await startTestApp({ imports: [ProbesModule] });
    org = await signUpOrganization(t.http, 'Order');
    for (const [name, type] of Object.entries(STEP_CLASSES)) {
      const step = t.app.get<AccessStep>(type);
      const check = step.check.bind(step);
      jest.spyOn(step, 'check').mockImplementation((attempt: AccessAttempt) => {
        ran.push(name);
        return check(attempt);
      });
    }
  });
  afterAll(() => t.close());
  beforeEach(() => {
    ran.length = 0;
    refusing.by = '';
  });

  const onlySteps = () => ran.filter((name) => (ACCESS_STEPS as readonly string[]).includes(name));
  const verify = (auth: Auth) => t.http.get('/v1/auth/verify').set(auth);

  it('runs every step of ACCESS_STEPS, once, in that order, and the policies by order then name', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 5 } });
    ran.length = 0;
    await verify(key.auth).expect(200);
    expect(onlySteps()).toEqual([...ACCESS_STEPS]);
    expect(ran).toEqual([
      'credential',
      'restrictions',
      'permission',
      'policies',
      'AlphaProbe',
      'ZuluProbe',
      'LateProbe',
      'rate_limit',
      'credits',
      'concurrency',
    ]);
    // This test's probes among the app's policies (the deployment's list may add its own).
    const probes = new Set(['AlphaProbe', 'ZuluProbe', 'LateProbe']);
    const policies = t.app.get(AccessPolicies).inOrder.filter(({ name }) => probes.has(name));
    expect(policies.map(({ name, order }) => [name, order])).toEqual([
      ['AlphaProbe', 10],
      ['ZuluProbe', 10],
      ['LateProbe', 20],
    ]);
  });

  it('stops at the first refusal: nothing after it runs', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer' });
    ran.length = 0;
    refusing.by = 'ZuluProbe';
    const refused = await verify(key.auth);
    expectProblem(refused, 403, 'forbidden');
    expect(ran).toEqual(['credential', 'restrictions', 'permission', 'policies', 'AlphaProbe', 'ZuluProbe']);
    expect(refused.headers['x-ratelimit-remaining']).toBeUndefined();
  });

  it('gives the credit back when a step after credits fails instead of deciding', async () => {
    const key = await createKey(t.http, org.auth, { role: 'viewer', credits: { remaining: 5 } });
    expect((await verify(key.auth).expect(200)).body.credits_remaining).toBe(4);
    const concurrency = t.app.get(ConcurrencyStep);
    jest.spyOn(concurrency, 'check').mockImplementationOnce(() => {
      throw new Error('a step failing');
    });
    expectProblem(await verify(key.auth), 500, 'internal_error');
    expect((await verify(key.auth).expect(200)).body.credits_remaining).toBe(3);
  });
});
