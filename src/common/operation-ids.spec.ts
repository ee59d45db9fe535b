import { readableOperationId } from './operation-ids';

describe('readableOperationId', () => {
  it('names a list by its resource, plural, and every other method by its resource, singular', () => {
    expect(readableOperationId('ApiKeysController', 'list')).toBe('listApiKeys');
    expect(readableOperationId('ApiKeysController', 'rotate')).toBe('rotateApiKey');
    expect(readableOperationId('IdentitiesController', 'get')).toBe('getIdentity');
    // An extension's controller, which the table below does not know, reads the same way.
    expect(readableOperationId('DatasetsController', 'create')).toBe('createDataset');
  });

  it('takes a method that is not a verb on its resource from the reviewed table', () => {
    expect(readableOperationId('KeysVerifyController', 'verify')).toBe('verifyApiKey');
    expect(readableOperationId('TasksController', 'events')).toBe('listTaskEvents');
    expect(readableOperationId('AuditController', 'list')).toBe('listAuditLog');
  });
});
