import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { newId } from '../common/ids';
import { FILE_ID } from './files.declarations';
import type { FileStorage } from './storage/file-storage';

/** What the engine leaves on `req.file` for the service to record. */
export interface StoredUpload {
  fileId: string;
  storageKey: string;
  size: number;
  sha256: string;
  originalname: string;
  mimetype: string;
}

/**
 * Multer storage that streams each upload straight into the FileStorage driver, hashing on the way:
 * memory stays flat whatever the size. When multer aborts (size limit, bad part), it calls
 * `_removeFile`, so nothing is left behind.
 */
export class StreamingStorageEngine implements StorageEngine {
  constructor(private readonly storage: FileStorage) {}

  _handleFile(
    req: Request,
    file: Express.Multer.File,
    callback: (error?: unknown, info?: Partial<StoredUpload>) => void,
  ): void {
    const organizationId = req.principal?.organizationId;
    if (!organizationId) return callback(new Error('upload without a resolved principal'));
    const fileId = newId(FILE_ID);
    const storageKey = `${organizationId}/${fileId}`;
    this.storage.write(storageKey, file.stream).then(
      ({ size, sha256 }) => callback(null, { fileId, storageKey, size, sha256 }),
      (error: unknown) => callback(error),
    );
  }

  _removeFile(
    _req: Request,
    file: Express.Multer.File & Partial<StoredUpload>,
    callback: (error: Error | null) => void,
  ): void {
    if (!file.storageKey) return callback(null);
    this.storage.remove(file.storageKey).then(
      () => callback(null),
      (error: Error) => callback(error),
    );
  }
}
