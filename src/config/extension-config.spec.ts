import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAppConfig } from './app-config';
import type { ConfigOf } from './config-namespace';
import { ConfigurationError, toBool, toInt } from './environment';
import { extensionConfig, readExtensionConfigs } from './extension-config';
import { ExtensionConfigModule } from './extension-config.module';

class ReportsVariables {
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  REPORTS_PAGE_SIZE = 20;

  @Transform(toBool)
  @IsBoolean({ message: 'REPORTS_ENABLED must be true or false' })
  REPORTS_ENABLED = true;

  @IsIn(['csv', 'json'])
  REPORTS_FORMAT: 'csv' | 'json' = 'csv';

  /** No default: unset unless given. */
  @IsOptional()
  @IsString()
  REPORTS_BUCKET?: string;
}

const reportsConfig = extensionConfig('reports', ReportsVariables, (env) => ({
  pageSize: env.REPORTS_PAGE_SIZE,
  enabled: env.REPORTS_ENABLED,
  format: env.REPORTS_FORMAT,
  bucket: env.REPORTS_BUCKET,
}));

const problemsOf = (raw: Record<string, string>) => {
  const read = reportsConfig.read(raw);
  return 'problems' in read ? read.problems : [];
};

describe('extension configuration', () => {
  it('names every variable it declares, those without a default too', () => {
    expect(reportsConfig.variables).toEqual([
      'REPORTS_PAGE_SIZE',
      'REPORTS_ENABLED',
      'REPORTS_FORMAT',
      'REPORTS_BUCKET',
    ]);
  });

  it('gives the defaults, and converts numbers and booleans as the core does', () => {
    expect(reportsConfig.read({})).toEqual({
      config: { pageSize: 20, enabled: true, format: 'csv', bucket: undefined },
    });
    expect(
      reportsConfig.read({ REPORTS_PAGE_SIZE: '50', REPORTS_ENABLED: 'no', REPORTS_BUCKET: 'b', PORT: '1' }),
    ).toEqual({ config: { pageSize: 50, enabled: false, format: 'csv', bucket: 'b' } });
  });

  it('says one thing per bad variable, naming it, as the core does', () => {
    expect(problemsOf({ REPORTS_PAGE_SIZE: 'many' })).toEqual([
      'REPORTS_PAGE_SIZE must be an integer number',
    ]);
    expect(problemsOf({ REPORTS_PAGE_SIZE: '500', REPORTS_FORMAT: 'xml' })).toEqual([
      'REPORTS_PAGE_SIZE must not be greater than 100',
      'REPORTS_FORMAT must be one of the following values: csv, json',
    ]);
  });

  it("refuses, where it is declared, a variable outside the extension's prefix or one of the core's", () => {
    class Stray {
      @IsInt()
      PAGE_SIZE = 1;
    }
    expect(() => extensionConfig('reports', Stray, (env) => env)).toThrow(
      'variable PAGE_SIZE must be UPPER_CASE and start with REPORTS_',
    );
    class RedisLike {
      @IsString()
      REDIS_URL = 'redis://x';
    }
    expect(() => extensionConfig('redis', RedisLike, (env) => env)).toThrow(
      "variable REDIS_URL is one of Gatehouse's own",
    );
    class Nothing {}
    expect(() => extensionConfig('reports', Nothing, () => ({}))).toThrow('declares no variable');
  });

  it('refuses one variable declared by two extensions', () => {
    class PageSize {
      @IsInt()
      REPORTS_PAGE_SIZE = 1;
    }
    // Each in its prefix: `reports` owns REPORTS_…, `reports-page` REPORTS_PAGE_….
    const reports = extensionConfig('reports', PageSize, (env) => env);
    const pages = extensionConfig('reports-page', PageSize, (env) => env);
    expect(() => readExtensionConfigs([reports, pages], {})).toThrow(
      'extensions "reports" and "reports-page" both declare REPORTS_PAGE_SIZE',
    );
  });

  describe('at start', () => {
    let dataDir: string;
    beforeEach(() => (dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-extension-config-'))));
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    it("is validated with the core's: one error lists every bad variable of both", () => {
      const start = () =>
        loadAppConfig({ DATA_DIR: dataDir, PORT: 'eighty', REPORTS_PAGE_SIZE: '0' }, [reportsConfig]);
      expect(start).toThrow(ConfigurationError);
      expect(start).toThrow(
        [
          'Invalid configuration: PORT must be an integer number',
          'Invalid configuration: REPORTS_PAGE_SIZE must not be less than 1',
        ].join('\n'),
      );
    });

    it('is injected by its KEY, from the variables the instance was started with', async () => {
      @Injectable()
      class ReportsService {
        constructor(@Inject(reportsConfig.KEY) readonly config: ConfigOf<typeof reportsConfig>) {}
      }
      @Module({ providers: [ReportsService] })
      class ReportsModule {}
      // Not validated by loadAppConfig here (a test's extensions are not known to it): by the module.
      const environment = loadAppConfig({ DATA_DIR: dataDir, REPORTS_FORMAT: 'json' });
      expect(environment.extensionVariables).toEqual({ REPORTS_FORMAT: 'json' });
      const moduleRef = await Test.createTestingModule({
        imports: [ExtensionConfigModule.forRoot(environment, [reportsConfig]), ReportsModule],
      }).compile();
      expect(moduleRef.get(ReportsService).config).toEqual({
        pageSize: 20,
        enabled: true,
        format: 'json',
        bucket: undefined,
      });
      await moduleRef.close();

      const invalid = loadAppConfig({ DATA_DIR: dataDir, REPORTS_FORMAT: 'xml' });
      expect(() => ExtensionConfigModule.forRoot(invalid, [reportsConfig])).toThrow(
        'Invalid configuration: REPORTS_FORMAT must be one of the following values: csv, json',
      );
    });
  });
});
