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

  it('says the dashboard is not built rather than leaving a person to find /dashboard answering 404', () => {
    const { lines } = startBanner({ ...facts, dashboardUrl: undefined });
    expect(lines[1]).toBe(
      'dashboard: not built, so http://localhost:3000/dashboard answers 404 (`npm run build` builds it)',
    );
    expect(lines.filter((line) => line.startsWith('dashboard:'))).toHaveLength(1);
  });
});
