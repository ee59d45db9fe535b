import { Readable } from 'node:stream';
import type { Principal } from '../../src/access/principal';
import type { FileRecord } from '../../src/files/file.entity';
import { FilesService } from '../../src/files/files.service';
import { FILE_STORAGE, FileStorage } from '../../src/files/storage/file-storage';
import type { StoredUpload } from '../../src/files/streaming-storage-engine';
import type { ServiceContext } from './test-instance';
import { testId } from './principals';

/**
 * An upload as the files API takes one, without HTTP: the bytes written to FileStorage under
 * `<organization>/<file id>` (what the streaming storage engine does), then recorded by FilesService.
 */
export async function storeFile(
  context: Pick<ServiceContext, 'get'>,
  principal: Principal,
  content: string | Buffer,
  upload: Partial<Pick<StoredUpload, 'originalname' | 'mimetype'>> & { purpose?: string } = {},
): Promise<FileRecord> {
  const fileId = testId('file');
  const storageKey = `${principal.organizationId}/${fileId}`;
  const { size, sha256 } = await context
    .get<FileStorage>(FILE_STORAGE)
    .write(storageKey, Readable.from([Buffer.from(content)]));
  return context.get(FilesService).record(
    principal,
    {
      fileId,
      storageKey,
      size,
      sha256,
      originalname: upload.originalname ?? 'file.txt',
      mimetype: upload.mimetype ?? 'text/plain',
    },
    upload.purpose,
  );
}
