import { allPermissions } from './roles/permissions';
import './worker.module';

describe('the worker process', () => {
  it('knows the whole permission vocabulary, though it boots only the modules it runs', () => {
    // A custom role read in the worker (a task's creator) must grant there what it grants in the API.
    expect(allPermissions()).toEqual(
      expect.arrayContaining(['users:read', 'api_keys:create', 'agents:execute']),
    );
  });
});
