import { ConfigOf } from '../../config/config-namespace';
import { filesConfig } from '../../config/namespaces';
import { Module } from '@nestjs/common';
import { FILE_STORAGE, FileStorage } from './file-storage';
import { LocalFileStorage } from './local-file-storage';

/** Binds the FileStorage driver; swap the factory for an S3-compatible driver. */
@Module({
  providers: [
    {
      provide: FILE_STORAGE,
      inject: [filesConfig.KEY],
      useFactory: (config: ConfigOf<typeof filesConfig>): FileStorage =>
        new LocalFileStorage(config.directory),
    },
  ],
  exports: [FILE_STORAGE],
})
export class FileStorageModule {}
