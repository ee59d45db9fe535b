import { Inject, Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import type { Principal } from '../access/principal';
import { isIdOf, newId } from '../common/ids';
import { FILE_ID } from './files.declarations';
import { ListQueryDto, Page } from '../common/pagination';
import { FileRecord } from './file.entity';
import { sanitizeFilename } from './filename';
import { FilesRepository } from './files.repository';
import { FILE_STORAGE, FileStorage } from './storage/file-storage';
import type { StoredUpload } from './streaming-storage-engine';
import { FileError, FileErrorCode } from './files.errors';
import { hasSqlState } from '../database/database-errors';

/** What the output-file trigger raises when the file's task no longer runs (AgentRuns migration). */
const TASK_NOT_RUNNING = 'GT001';

@Injectable()
export class FilesService {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  /** The ids of the output files a task's runs uploaded (what its task token may read besides attachments). */
  outputIdsOf(organizationId: string, taskId: string): Promise<string[]> {
    return this.files.idsOfTaskOutputs(organizationId, taskId);
  }

  /**
   * Records an upload the storage engine has already written; removes the bytes if the row fails. With
   * a task token it is an output file of the token's task: the row's trigger writes the task's `file`
   * event in the same statement, and refuses (SQLSTATE GT001) once the task no longer runs.
   */
  async record(
    principal: Principal,
    upload: StoredUpload | undefined,
    purpose?: string,
  ): Promise<FileRecord> {
    if (!upload) {
      throw new FileError(
        FileErrorCode.FileRequired,
        'Send the file as multipart/form-data in the field "file".',
        {
          errors: [{ field: 'file', message: 'file is required' }],
        },
      );
    }
    try {
      return await this.files.insert({
        id: upload.fileId,
        organizationId: principal.organizationId,
        filename: sanitizeFilename(upload.originalname),
        contentType: upload.mimetype || 'application/octet-stream',
        size: upload.size,
        sha256: upload.sha256,
        purpose: purpose ?? null,
        storageKey: upload.storageKey,
        createdBy: principal.apiKeyId ?? principal.userId,
        taskId: principal.task?.taskId ?? null,
      });
    } catch (error) {
      await this.storage.remove(upload.storageKey);
      if (hasSqlState(error, TASK_NOT_RUNNING)) {
        throw new FileError(FileErrorCode.TaskTokenExpired, "The task token's run has ended.");
      }
      throw error;
    }
  }

  /**
   * A file whose bytes are already in memory (MCP's upload_file), stored and recorded as an upload to
   * POST /v1/files is: the same storage key, sanitized name and row, the bytes removed if the row fails.
   */
  async store(
    principal: Principal,
    file: { filename: string; contentType: string; bytes: Buffer },
  ): Promise<FileRecord> {
    const fileId = newId(FILE_ID);
    const storageKey = `${principal.organizationId}/${fileId}`;
    const { size, sha256 } = await this.storage.write(storageKey, Readable.from([file.bytes]));
    return this.record(principal, {
      fileId,
      storageKey,
      size,
      sha256,
      originalname: file.filename,
      mimetype: file.contentType,
    });
  }

  list(principal: Principal, query: ListQueryDto): Promise<Page<FileRecord>> {
    return this.files.page(principal.organizationId, query);
  }

  async get(principal: Principal, id: string): Promise<FileRecord> {
    const file = isIdOf(FILE_ID, id)
      ? await this.files.findInOrganization(principal.organizationId, id)
      : null;
    if (!file) throw new FileError(FileErrorCode.NotFound, 'The file was not found.');
    return file;
  }

  async open(principal: Principal, id: string): Promise<{ file: FileRecord; content: Readable }> {
    const file = await this.get(principal, id);
    return { file, content: this.storage.read(file.storageKey) };
  }

  async delete(principal: Principal, id: string): Promise<void> {
    const file = await this.get(principal, id);
    await this.files.delete(file.id);
    await this.storage.remove(file.storageKey);
  }

  /** The organization's files among `ids`, for task attachments; order follows `ids`. */
  async findOwned(organizationId: string, ids: string[]): Promise<FileRecord[]> {
    if (!ids.length) return [];
    const rows = await this.files.findAmong(
      organizationId,
      ids.filter((id) => isIdOf(FILE_ID, id)),
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  }
}
