import { defineExtension } from '../../../src/extension';
import { Projects1796186586573 } from './1796186586573-Projects';
import { ProjectsHttpModule } from './projects-http.module';
import { ProjectsModule } from './projects.module';

/**
 * A CRUD resource with its permissions, id prefix, audit actions and webhook event
 * (projects.declarations.ts), its table (entity and migration) and its routes, on the extension surface
 * alone. The worker loads ProjectsModule and runs the migration too (whichever process starts first
 * creates the table); only the API serves /v1/projects.
 */
export const projectsExtension = defineExtension({
  name: 'projects',
  module: ProjectsModule,
  httpModule: ProjectsHttpModule,
  migrations: [Projects1796186586573],
});
