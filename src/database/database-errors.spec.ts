import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
import { isDatabaseUnavailable, isUniqueViolation } from './database-errors';

describe('database errors', () => {
  it.each([
    [{ code: 'ECONNREFUSED' }],
    [{ code: '57P01' }],
    [{ code: '08006' }],
    [{ message: 'canceling statement due to statement timeout', driverError: { code: '57014' } }],
    [{ message: 'Connection terminated unexpectedly' }],
    [{ message: 'query failed', driverError: { code: 'ECONNRESET' } }],
  ])('%j means the database is unavailable', (error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('a query runner released under a transaction (the pool dropped it) means the same', () => {
    expect(isDatabaseUnavailable(new QueryRunnerAlreadyReleasedError())).toBe(true);
    expect(isDatabaseUnavailable(new QueryRunnerProviderAlreadyReleasedError())).toBe(true);
  });

  it.each([[{ code: '23505' }], [{ message: 'syntax error' }], [undefined]])('%j does not', (error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('recognises a unique violation by constraint', () => {
    const error = { driverError: { code: '23505', constraint: 'users_email_key' } };
    expect(isUniqueViolation(error, 'users_email_key')).toBe(true);
    expect(isUniqueViolation(error, 'other')).toBe(false);
  });
});
