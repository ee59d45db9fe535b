import { join } from 'node:path';
import { AccessPolicies } from '../../../src/access/access-policy';
import {
  expectProblem,
  PASSWORD,
  signUpOrganization,
  SignedUpOrganization,
} from '../../../test/support/factories';
import { createKey, CreatedKey } from '../../../test/support/keys';
import { ManualClock } from '../../../test/support/manual-clock';
import { undocumentedDenialCodes } from '../../../test/support/readme-errors';
import { startTestApp, TestApp } from '../../../test/support/test-app';
import { maintenanceWindowConfig } from './maintenance-window.config';
import { maintenanceWindowExtension } from './maintenance-window.extension';
import { windowEndAround } from './maintenance-window.policy';

const WEDNESDAY_NOON = Date.parse('2026-11-25T12:00:00Z');
const SUNDAY_HALF_PAST_TWO = Date.parse('2026-11-29T02:30:00Z');

/**
 * A policy of the key check, loaded as one list line would, with the window its variables give by
 * default (writes paused every Sunday 02:00-03:00 UTC).
 */
describe('example extension: an access policy (maintenance window)', () => {
  const clock = new ManualClock(WEDNESDAY_NOON);
  let t: TestApp;
  let org: SignedUpOrganization;
  let developer: CreatedKey;
  let viewer: CreatedKey;
  beforeAll(async () => {
    // The defaults (Sunday 02:00 for 60 minutes), whatever this run's environment sets: CI moves the
    // window away from its own run when the examples are in the production list.
    const defaults = {
      MAINTENANCE_WINDOW_WEEKDAY: undefined,
      MAINTENANCE_WINDOW_FROM: undefined,
      MAINTENANCE_WINDOW_MINUTES: undefined,
    };
    t = await startTestApp({ extensions: [maintenanceWindowExtension], clock, env: defaults });
    org = await signUpOrganization(t.http, 'Maintenance');
    developer = await createKey(t.http, org.auth, { role: 'developer', type: 'service' });
    viewer = await createKey(t.http, org.auth, { role: 'viewer', type: 'service' });
  });
  afterAll(() => t?.close());
  afterEach(() => clock.set(WEDNESDAY_NOON));

  const defineAgent = (key: CreatedKey) =>
    t.http.post('/v1/agents').set(key.auth).send({ name: 'Echo again', type: 'echo' });

  it('lets writes through outside the window, and from the minute it ends', async () => {
    await defineAgent(developer).expect(201);
    clock.set(Date.parse('2026-11-29T03:00:00Z'));
    await defineAgent(developer).expect(201);
  });

  it('refuses writes during the window with 503 and the seconds until it ends, spending no budget', async () => {
    clock.set(SUNDAY_HALF_PAST_TWO);
    const refused = await defineAgent(developer);
    expectProblem(refused, 503, 'maintenance_window');
    expect(refused.headers['retry-after']).toBe('1800');
    // Refused before the rate limit: no budget was spent or reported.
    expect(refused.headers['x-ratelimit-remaining']).toBeUndefined();
  });

  it('runs after the permission step, and lets reads and public routes through', async () => {
    clock.set(SUNDAY_HALF_PAST_TWO);
    // The permission step comes first: a viewer is refused for the permission, not the window.
    expectProblem(await defineAgent(viewer), 403, 'forbidden');
    // Reads pass the policy and reach the rate limit.
    const read = await t.http.get('/v1/agents').set(developer.auth).expect(200);
    expect(read.headers['x-ratelimit-remaining']).toEqual(expect.stringMatching(/^\d+$/));
    // The key check (and its policies) does not run for public routes: signing in still works.
    await t.http.post('/v1/auth/token').send({ email: org.email, password: PASSWORD }).expect(200);
  });

  it('is one of the key check’s policies, at the order it asked for', () => {
    expect(t.app.get(AccessPolicies).inOrder.map(({ name, order }) => [name, order])).toEqual([
      ['MaintenanceWindowPolicy', 10],
    ]);
  });

  it("documents its refusal code in its own README's Errors table, not the core's", () => {
    const own = { only: ['maintenance_window'] };
    expect(undocumentedDenialCodes({ ...own, readme: join(__dirname, 'README.md') })).toEqual([]);
    expect(undocumentedDenialCodes(own)).toEqual(['maintenance_window: 503']);
  });

  it('finds the window across the end of a week', () => {
    const lateSunday = { weekday: 'sunday', from: '23:30', minutes: 60 } as const;
    expect(windowEndAround(lateSunday, Date.parse('2026-11-30T00:15:00Z'))).toBe(
      Date.parse('2026-11-30T00:30:00Z'),
    );
    expect(windowEndAround(lateSunday, Date.parse('2026-11-30T00:30:00Z'))).toBeUndefined();
    expect(windowEndAround(lateSunday, Date.parse('2026-11-29T23:29:59Z'))).toBeUndefined();
  });

  describe('configured by its variables', () => {
    it('takes the window the environment gives', async () => {
      // Outside the window it is given, inside the default one.
      const configuredClock = new ManualClock(SUNDAY_HALF_PAST_TWO);
      const configured = await startTestApp({
        extensions: [maintenanceWindowExtension],
        clock: configuredClock,
        env: {
          MAINTENANCE_WINDOW_WEEKDAY: 'wednesday',
          MAINTENANCE_WINDOW_FROM: '11:30',
          MAINTENANCE_WINDOW_MINUTES: '90',
        },
      });
      try {
        expect(configured.app.get(maintenanceWindowConfig.KEY)).toEqual({
          weekday: 'wednesday',
          from: '11:30',
          minutes: 90,
        });
        const other = await signUpOrganization(configured.http, 'Maintenance elsewhere');
        const key = await createKey(configured.http, other.auth, { role: 'developer', type: 'service' });
        const create = () =>
          configured.http.post('/v1/agents').set(key.auth).send({ name: 'Echo', type: 'echo' });
        await create().expect(201);
        // Wednesday noon is inside 11:30-13:00: refused until 13:00.
        configuredClock.set(WEDNESDAY_NOON);
        const refused = await create();
        expectProblem(refused, 503, 'maintenance_window');
        expect(refused.headers['retry-after']).toBe('3600');
      } finally {
        await configured.close();
      }
    });

    it.each([
      [{ MAINTENANCE_WINDOW_FROM: '2am' }, 'MAINTENANCE_WINDOW_FROM must be HH:MM (UTC)'],
      [{ MAINTENANCE_WINDOW_MINUTES: '0' }, 'MAINTENANCE_WINDOW_MINUTES must not be less than 1'],
      [{ MAINTENANCE_WINDOW_WEEKDAY: 'Sunday' }, 'MAINTENANCE_WINDOW_WEEKDAY must be one of the following'],
    ])('refuses to start with %j, naming the variable', async (env, message) => {
      // On the running instance's database and directory (the caller owns them, so nothing is dropped):
      // the start is refused before it opens either.
      const start = startTestApp({
        extensions: [maintenanceWindowExtension],
        env,
        databaseUrl: t.databaseUrl,
        embedded: !t.databaseUrl,
        dataDir: t.dataDir,
      });
      await expect(start).rejects.toThrow(`Invalid configuration: ${message}`);
    });
  });
});
