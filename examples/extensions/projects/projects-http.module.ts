import { Module } from '@nestjs/common';
import { ProjectsController } from './projects.controller';
import { ProjectsModule } from './projects.module';

/** The projects API (/v1/projects) over ProjectsModule: the API process only. */
@Module({
  imports: [ProjectsModule],
  controllers: [ProjectsController],
})
export class ProjectsHttpModule {}
