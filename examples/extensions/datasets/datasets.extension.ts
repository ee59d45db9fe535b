import { defineExtension } from '../../../src/extension';
import { Datasets1795632887238 } from './1795632887238-Datasets';
import { DatasetsHttpModule } from './datasets-http.module';
import { DatasetsModule } from './datasets.module';

/**
 * A resource with its permissions (datasets.declarations.ts), its table (entity and migration) and its
 * routes. The worker loads DatasetsModule and runs the migration too (whichever process starts first
 * creates the table); only the API serves /v1/datasets.
 */
export const datasetsExtension = defineExtension({
  name: 'datasets',
  module: DatasetsModule,
  httpModule: DatasetsHttpModule,
  migrations: [Datasets1795632887238],
});
