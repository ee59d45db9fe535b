import { Module } from '@nestjs/common';
import { FilesModule } from '../../files/files.module';
import { TaskTokens } from './task-tokens';

/**
 * Task tokens on their own, so the access layer can resolve them without depending on the tasks module
 * (which the worker and the tasks API build on), and the worker can mint them.
 */
@Module({ imports: [FilesModule], providers: [TaskTokens], exports: [TaskTokens] })
export class TaskTokensModule {}
