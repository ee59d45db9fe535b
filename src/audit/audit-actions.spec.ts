import { CommonError } from '../common/common.errors';
import { AuditActions } from './audit-actions';

describe('AuditActions', () => {
  const declared = (...lists: string[][]): AuditActions => {
    const actions = new AuditActions();
    for (const list of lists) actions.declare(list);
    return actions;
  };

  it('lists what the modules declared, sorted whatever their order, and one group per resource', () => {
    const one = declared(['user.created', 'dataset.deleted'], ['dataset.created']);
    const other = declared(['dataset.created'], ['dataset.deleted', 'user.created']);
    expect(one.actions()).toEqual(['dataset.created', 'dataset.deleted', 'user.created']);
    expect(other.filters()).toEqual(one.filters());
    expect(one.filters()).toEqual([
      'dataset.created',
      'dataset.deleted',
      'user.created',
      'dataset.*',
      'user.*',
    ]);
  });

  it('takes a declared action or group as a filter, and refuses anything else naming the field', () => {
    // Typed as its class: TypeScript calls an assertion method only through a declared type.
    const actions: AuditActions = declared(['user.created']);
    expect(() => actions.assertFilter(undefined)).not.toThrow();
    expect(() => actions.assertFilter('user.created')).not.toThrow();
    expect(() => actions.assertFilter('user.*')).not.toThrow();
    for (const filter of ['user.', 'user.deleted', '*', 'team.*', ['user.created'], 1]) {
      let refusal: unknown;
      try {
        actions.assertFilter(filter);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(CommonError);
      expect((refusal as CommonError).errors).toEqual([
        { field: 'action', message: 'action must be one of user.created, user.*' },
      ]);
    }
  });

  it('knows an action declared after a filter was checked', () => {
    const actions: AuditActions = declared(['user.created']);
    expect(() => actions.assertFilter('user.created')).not.toThrow();
    actions.declare(['dataset.created']);
    expect(() => actions.assertFilter('dataset.*')).not.toThrow();
  });

  it('refuses an action declared twice, one of another shape, and one declared once the app has started', () => {
    expect(() => declared(['user.created'], ['user.created'])).toThrow(/declared twice/);
    for (const action of ['user', 'User.created', 'user.created.twice', 'user.*', 'user-x.created']) {
      expect(() => declared([action])).toThrow(/must match/);
    }
    const started = declared(['user.created']);
    started.onApplicationBootstrap();
    expect(() => started.declare(['dataset.created'])).toThrow(/after the app started/);
    expect(started.isDeclared('dataset.created')).toBe(false);
  });
});
