import { CommonError } from '../common/common.errors';
import { WebhookEventTypes } from './webhook-event-types';

class KeyData {}
class DatasetData {}

describe('WebhookEventTypes', () => {
  const declared = (...tables: Record<string, new () => unknown>[]): WebhookEventTypes => {
    const types = new WebhookEventTypes();
    for (const table of tables) types.declare(table);
    return types;
  };

  const refusal = (types: WebhookEventTypes, events: unknown[]): unknown => {
    try {
      types.assertSubscribable(events);
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('lists the declared types sorted, each with its payload class', () => {
    const types = declared({ 'key.created': KeyData }, { 'dataset.created': DatasetData });
    expect(types.types()).toEqual(['dataset.created', 'key.created']);
    expect(types.payloads()).toEqual({ 'dataset.created': DatasetData, 'key.created': KeyData });
  });

  it('takes a subscription to declared types, and refuses an unknown one or too many naming `events`', () => {
    const types = declared({ 'key.created': KeyData, 'dataset.created': DatasetData });
    expect(refusal(types, ['dataset.created', 'key.created'])).toBeUndefined();
    expect(refusal(types, ['key.created', 'key.created'])).toBeUndefined();
    const unknown = refusal(types, ['key.created', 'dataset.updated']);
    expect(unknown).toBeInstanceOf(CommonError);
    expect((unknown as CommonError).errors).toEqual([
      { field: 'events', message: 'each event must be one of dataset.created, key.created' },
    ]);
    expect(refusal(types, [1])).toBeInstanceOf(CommonError);
    const tooMany = refusal(types, ['key.created', 'key.created', 'key.created']);
    expect((tooMany as CommonError).errors).toEqual([
      { field: 'events', message: 'events must contain no more than 2 elements' },
    ]);
  });

  it('refuses a type declared twice, one of another shape, and one declared once the app has started', () => {
    expect(() => declared({ 'key.created': KeyData }, { 'key.created': DatasetData })).toThrow(
      /declared twice/,
    );
    expect(() => declared({ ping: KeyData })).toThrow(/must match/);
    const started = declared({ 'key.created': KeyData });
    started.onApplicationBootstrap();
    expect(() => started.declare({ 'dataset.created': DatasetData })).toThrow(/after the app started/);
  });
});
