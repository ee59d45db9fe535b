import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { ConfigOf } from '../config/config-namespace';
import { filesConfig } from '../config/namespaces';
import { FilesController } from './files.controller';
import { FilesModule } from './files.module';
import { FILE_STORAGE, FileStorage } from './storage/file-storage';
import { FileStorageModule } from './storage/file-storage.module';
import { StreamingStorageEngine } from './streaming-storage-engine';

/** The files API (/v1/files): uploads streamed through multer into the FileStorage driver. */
@Module({
  imports: [
    FilesModule,
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
})
export class FilesHttpModule {}
