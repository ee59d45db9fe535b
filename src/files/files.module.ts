import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FileRecord } from './file.entity';
import { FilesRepository } from './files.repository';
import { FilesService } from './files.service';
import { FileStorageModule } from './storage/file-storage.module';

/** Uploaded files: their records and the FileStorage driver that holds the bytes (local by default). */
@Module({
  imports: [TypeOrmModule.forFeature([FileRecord]), FileStorageModule],
  providers: [FilesRepository, FilesService],
  exports: [FilesService, FileStorageModule],
})
export class FilesModule {}
