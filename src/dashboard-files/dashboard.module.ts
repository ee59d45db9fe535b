import { Inject, MiddlewareConsumer, Module, NestModule, OnModuleInit } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { ExpressLoader } from '@nestjs/serve-static';
import { ConfigOf } from '../config/config-namespace';
import { dashboardConfig } from '../config/namespaces';
import { dashboardHeaders } from './dashboard-headers';
import { DASHBOARD_ROOT, dashboardServing } from './dashboard-serving';

/**
 * The dashboard's single-page app at /dashboard (DASHBOARD_DIR, by default the Vite build in
 * dist/dashboard), from this process and port. Public by nature: the files are served by Express
 * middleware, which the key check's guards never see, and the page loads before anyone signs in; it
 * holds no data, and reads everything through the /v1 API with its own access token.
 * AppModule imports it; the worker serves no HTTP. (Not in src/dashboard: `nest build` would compile
 * that into dist/dashboard, the Vite build's own directory, which Vite empties before each build.)
 *
 * @nestjs/serve-static's Express loader is registered here at init rather than through
 * ServeStaticModule: that module picks its loader when its providers are built, which in a testing
 * module is before the HTTP adapter exists, so under test it would serve nothing
 * (nestjs/serve-static#240). This way the e2e tests exercise exactly what production serves.
 */
@Module({})
export class DashboardModule implements NestModule, OnModuleInit {
  constructor(
    @Inject(dashboardConfig.KEY) private readonly config: ConfigOf<typeof dashboardConfig>,
    private readonly adapterHost: HttpAdapterHost,
    private readonly applicationConfig: ApplicationConfig,
  ) {}

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(dashboardHeaders).forRoutes(DASHBOARD_ROOT, `${DASHBOARD_ROOT}/{*path}`);
  }

  onModuleInit(): void {
    const { httpAdapter } = this.adapterHost;
    // A context without HTTP (service tests) has nothing to serve from.
    if (!httpAdapter) return;
    new ExpressLoader().register(
      httpAdapter,
      this.applicationConfig,
      dashboardServing(this.config.directory),
    );
  }
}
