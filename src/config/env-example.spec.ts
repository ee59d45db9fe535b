import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvironmentVariables, OPTIONAL_WITHOUT_DEFAULT, validateEnvironment } from './environment';

describe('.env.example', () => {
  const example = readFileSync(join(__dirname, '..', '..', '.env.example'), 'utf8');

  it('lists every variable the service reads', () => {
    const variables = [...new Set([...Object.keys(new EnvironmentVariables()), ...OPTIONAL_WITHOUT_DEFAULT])];
    const missing = variables.filter((name) => !new RegExp(`^#? ?${name}=`, 'm').test(example));
    expect(missing).toEqual([]);
  });

  it('holds only valid values', () => {
    const set = Object.fromEntries(
      example
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    // The example's values are the defaults: validating them must give back the same configuration.
    expect(validateEnvironment(set)).toEqual(validateEnvironment({}));
  });
});
