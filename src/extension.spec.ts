import { Module } from '@nestjs/common';
import type { MigrationInterface } from 'typeorm';
import {
  defineExtension,
  distinctExtensions,
  httpModulesOf,
  migrationsOf,
  sharedModulesOf,
} from './extension';

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
});
