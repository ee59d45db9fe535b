import { permissionsForQuery, QueryPermissions } from './route-access.decorators';

describe('permissionsForQuery', () => {
  const declared: QueryPermissions = { parameter: 'group_by', byValue: { identity: ['identities:read'] } };

  it('adds the permissions of the value the query names', () => {
    expect(permissionsForQuery(declared, { group_by: 'identity' })).toEqual(['identities:read']);
  });

  it('adds none for another value, no value or no query: validation answers those', () => {
    expect(permissionsForQuery(declared, { group_by: 'key' })).toEqual([]);
    expect(permissionsForQuery(declared, { other: 'identity' })).toEqual([]);
    expect(permissionsForQuery(declared, {})).toEqual([]);
    expect(permissionsForQuery(declared, undefined)).toEqual([]);
  });

  it("adds none for a repeated parameter, an object or a name of Object's prototype", () => {
    expect(permissionsForQuery(declared, { group_by: ['identity', 'identity'] })).toEqual([]);
    expect(permissionsForQuery(declared, { group_by: { identity: '1' } })).toEqual([]);
    for (const value of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect(permissionsForQuery(declared, { group_by: value })).toEqual([]);
  });
});
