import { DataSource } from 'typeorm';
import { AuditActions } from '../../src/audit/audit-actions';
import { AuditRepository } from '../../src/audit/audit.repository';
import { AuditEvent, AuditService, SYSTEM_ACTOR } from '../../src/audit/audit.service';
import { IdentitiesModule } from '../../src/identities/identities.module';
import { WebhookEventTypes } from '../../src/webhooks/webhook-event-types';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { testId } from '../support/principals';

/**
 * Each module declares the audit actions it records and the webhook event types it emits, from its own
 * `onModuleInit`: an app holds what its loaded modules declare, and AuditService refuses to record an
 * action no loaded module declared, writing nothing. Here the platform and IdentitiesModule alone,
 * without ApiKeysModule.
 */
describe('declared audit actions (service level)', () => {
  let context: ServiceContext;
  let audit: AuditService;
  let dataSource: DataSource;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [IdentitiesModule] });
    audit = context.get(AuditService);
    dataSource = context.get(DataSource);
  });
  afterAll(() => context?.close());

  const event = (organizationId: string, action: string): AuditEvent => ({
    organizationId,
    action,
    actor: SYSTEM_ACTOR,
  });
  const append = (...events: AuditEvent[]): Promise<void> =>
    dataSource.transaction((manager) => audit.append(manager, events));
  const actionsOf = async (organizationId: string) =>
    (await context.get(AuditRepository).chainOf(organizationId)).map((entry) => entry.action);

  it('holds what the loaded modules declare, and nothing of a module not loaded', () => {
    const actions = context.get(AuditActions).actions();
    expect(actions).toEqual(
      expect.arrayContaining(['identity.created', 'identity.credits_low', 'key.denied']),
    );
    expect(actions.filter((action) => action.startsWith('key.'))).toEqual(['key.denied']);
    expect(context.get(WebhookEventTypes).types()).toEqual([
      'identity.created',
      'identity.credits_low',
      'identity.deleted',
      'identity.updated',
    ]);
  });

  it('records a declared action', async () => {
    const org = testId('org');
    await append(event(org, 'identity.created'));
    expect(await actionsOf(org)).toEqual(['identity.created']);
  });

  it('refuses to record an action nobody declared, and writes none of the change', async () => {
    const org = testId('org');
    // key.created is ApiKeysModule's, which this app does not load; dataset.created no module's at all.
    for (const action of ['key.created', 'dataset.created']) {
      await expect(append(event(org, 'identity.updated'), event(org, action))).rejects.toThrow(
        `audit action "${action}" is not declared`,
      );
    }
    expect(await actionsOf(org)).toEqual([]);
  });
});
