import { startBanner, StartFacts } from './start-banner';

const facts: StartFacts = {
  version: '1.2.3',
  url: 'http://localhost:3000',
  database: { kind: 'embedded', dataDir: './data' },
  hasUser: true,
  signupAllowed: false,
  dashboardUrl: 'http://localhost:3000/dashboard',
};

describe('startBanner', () => {
  it('names the dashboard URL right after the address it listens on', () => {
    const { lines } = startBanner(facts);
    expect(lines[0]).toBe('Gatehouse 1.2.3 listening on http://localhost:3000');
    expect(lines[1]).toBe('dashboard: http://localhost:3000/dashboard');
  });

  it('offers no dashboard URL without a build (/dashboard answers 404 then)', () => {
    const { lines } = startBanner({ ...facts, dashboardUrl: undefined });
    expect(lines.filter((line) => line.includes('/dashboard'))).toEqual([]);
  });

  it('names both addresses past a transaction pooler, without their passwords', () => {
    const { lines } = startBanner({
      ...facts,
      database: {
        kind: 'postgres',
        url: 'postgresql://app:secret@pooler:6432/gatehouse',
        directUrl: 'postgresql://app:secret@db:5432/gatehouse',
      },
    });
    const database = lines.filter((line) => line.startsWith('database:'));
    expect(database).toHaveLength(1);
    expect(database[0]).toMatch(
      /^database: PostgreSQL at postgresql:\/\/app:[^@]*@pooler:6432\/gatehouse through a transaction pooler \(LISTEN and migrations at postgresql:\/\/app:[^@]*@db:5432\/gatehouse\)$/,
    );
    expect(database[0]).not.toContain('secret');
  });
});
