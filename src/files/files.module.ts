import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Task } from '../tasks/task.entity';
import { FileRecord } from './file.entity';
import { FilesRepository } from './files.repository';
import { FilesService } from './files.service';
import { FileStorageModule } from './storage/file-storage.module';

/** Uploaded files: their records and the FileStorage driver that holds the bytes (local by default). */
@Module({
  // Task too: files.task_id's foreign key names it, and TypeORM builds a foreign key only to an entity of
  // the same data source (a process may load this module without TasksModule, as its medium spec does).
  imports: [TypeOrmModule.forFeature([FileRecord, Task]), FileStorageModule],
  providers: [FilesRepository, FilesService],
  exports: [FilesService, FileStorageModule],
})
export class FilesModule {}
