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
});
