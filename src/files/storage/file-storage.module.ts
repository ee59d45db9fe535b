import { Module } from '@nestjs/common';
import { join } from 'node:path';
import { APP_CONFIG, AppConfig } from '../../config/app-config';
import { FILE_STORAGE, FileStorage } from './file-storage';
import { LocalFileStorage } from './local-file-storage';

/** Binds the FileStorage driver; swap the factory for an S3-compatible driver. */
@Module({
  providers: [
    {
      provide: FILE_STORAGE,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): FileStorage => new LocalFileStorage(join(config.DATA_DIR, 'files')),
    },
  ],
  exports: [FILE_STORAGE],
})
export class FileStorageModule {}
