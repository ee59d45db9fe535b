import { Module } from '@nestjs/common';
import { IsInt } from 'class-validator';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';
import { EXAMPLE_EXTENSIONS } from '../examples/extensions';
import { extensionConfig } from './config/extension-config';
import {
  configsOf,
  defineExtension,
  distinctExtensions,
  httpModulesOf,
  migrationsOf,
  sharedModulesOf,
} from './extension';
import { EXTENSIONS } from './extensions';

@Module({})
class SharedModule {}
@Module({})
class HttpModule {}
class Things1795000000000 implements MigrationInterface {
  async up(): Promise<void> {}
  async down(): Promise<void> {}
}

describe('extensions', () => {
  const both = defineExtension({
    name: 'things',
    module: SharedModule,
    httpModule: HttpModule,
    migrations: [Things1795000000000],
  });
  const policyOnly = defineExtension({ name: 'a-policy', httpModule: HttpModule });

  it('gives the worker the shared part, the API both, the database the migrations', () => {
    expect(sharedModulesOf([both, policyOnly])).toEqual([SharedModule]);
    expect(httpModulesOf([both, policyOnly])).toEqual([HttpModule, HttpModule]);
    expect(migrationsOf([both, policyOnly])).toEqual([Things1795000000000]);
  });

  it('loads an extension named twice once (its migrations would otherwise run twice)', () => {
    expect(distinctExtensions([both, policyOnly, both])).toEqual([both, policyOnly]);
    expect(migrationsOf([both, both])).toEqual([Things1795000000000]);
  });

  it('refuses two different extensions of one name', () => {
    const impostor = defineExtension({ name: 'things', module: SharedModule });
    expect(() => distinctExtensions([both, impostor])).toThrow('two extensions are named "things"');
  });

  it('refuses a descriptor with a bad name or nothing to load', () => {
    expect(() => defineExtension({ name: 'Things', module: SharedModule })).toThrow('lowercase');
    expect(() => defineExtension({ name: 'things', migrations: [] })).toThrow('neither');
  });

  it("refuses a configuration declared for another extension's name, and gives each one once", () => {
    class ThingsVariables {
      @IsInt()
      THINGS_LIMIT = 1;
    }
    const config = extensionConfig('things', ThingsVariables, (env) => ({ limit: env.THINGS_LIMIT }));
    expect(() => defineExtension({ name: 'other-things', module: SharedModule, config })).toThrow(
      `extension "other-things" has the configuration of "things"`,
    );
    const configured = defineExtension({ name: 'things', module: SharedModule, config });
    expect(configsOf([configured, policyOnly, configured])).toEqual([config]);
  });
});

describe('.env.example, for the extensions', () => {
  const example = readFileSync(join(__dirname, '..', '.env.example'), 'utf8');
  // The examples' variables are in their own section, at the end, so a deployment does not take them
  // for its own.
  const marker = example.indexOf('# ---- Example extensions');
  const deploymentPart = example.slice(0, marker);
  const examplesPart = example.slice(marker);
  const listed = (part: string, name: string) => new RegExp(`^#? ?${name}=`, 'm').test(part);
  const valuesIn = (part: string) =>
    Object.fromEntries(
      [...part.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, name, value]) => [name, value]),
    );

  it('has a section for the examples', () => {
    expect(marker).toBeGreaterThan(0);
  });

  it.each([
    ['the deployment’s list (src/extensions.ts)', EXTENSIONS, deploymentPart],
    ['examples/extensions/index.ts, in the examples’ section', EXAMPLE_EXTENSIONS, examplesPart],
  ])('lists every variable an extension of %s declares', (_, extensions, part) => {
    const missing = configsOf(extensions)
      .flatMap(({ variables }) => variables)
      .filter((name) => !listed(part, name));
    expect(missing).toEqual([]);
  });

  it('gives each extension variable its default, as it does the core’s', () => {
    for (const config of configsOf([...EXTENSIONS, ...EXAMPLE_EXTENSIONS])) {
      expect(config.read(valuesIn(example))).toEqual(config.read({}));
    }
  });
});
