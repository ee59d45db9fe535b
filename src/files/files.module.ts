import { ConfigOf } from '../config/config-namespace';
import { filesConfig } from '../config/namespaces';
import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FileRecord } from './file.entity';
import { FilesController } from './files.controller';
import { FilesService } from './files.service';
import { FILE_STORAGE, FileStorage } from './storage/file-storage';
import { FileStorageModule } from './storage/file-storage.module';
import { StreamingStorageEngine } from './streaming-storage-engine';

/** Uploads streamed through multer into a FileStorage driver (local directory by default). */
@Module({
  imports: [
    TypeOrmModule.forFeature([FileRecord]),
    FileStorageModule,
    MulterModule.registerAsync({
      imports: [FileStorageModule],
      inject: [filesConfig.KEY, FILE_STORAGE],
      useFactory: (config: ConfigOf<typeof filesConfig>, storage: FileStorage) => ({
        storage: new StreamingStorageEngine(storage),
        // Browsers and HTTP clients send non-ASCII file names as raw UTF-8; busboy's default (latin1) would garble them.
        defParamCharset: 'utf8',
        limits: { fileSize: config.maxFileSize, files: 1, fields: 5, fieldSize: 1024, parts: 10 },
      }),
    }),
  ],
  controllers: [FilesController],
  providers: [FilesService],
  exports: [FilesService, FileStorageModule],
})
export class FilesModule {}
