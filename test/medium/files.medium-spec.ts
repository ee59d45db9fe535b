import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Principal } from '../../src/access/principal';
import type { FileRecord } from '../../src/files/file.entity';
import { FilesModule } from '../../src/files/files.module';
import { FilesService } from '../../src/files/files.service';
import { FILE_STORAGE, FileStorage } from '../../src/files/storage/file-storage';
import { ServiceContext, startFeatureContext } from '../support/feature-context';
import { nextMillisecond } from '../support/pagination';
import { testId, userOfNewOrganization } from '../support/principals';
import { storeFile } from '../support/stored-files';

/**
 * FilesService on a real database and the local FileStorage under DATA_DIR/files: records of uploads,
 * scoped to their organization, whose bytes go when the record goes. Multipart parsing, the size limit
 * and downloads over HTTP are test/files.e2e-spec.ts's.
 */
describe('files (service level)', () => {
  let context: ServiceContext;
  let files: FilesService;

  beforeAll(async () => {
    context = await startFeatureContext({ imports: [FilesModule] });
    files = context.get(FilesService);
  });
  afterAll(() => context?.close());

  const onDisk = (file: FileRecord): boolean =>
    existsSync(join(context.config.DATA_DIR, 'files', file.storageKey));
  const contentOf = async (principal: Principal, id: string): Promise<string> =>
    (await buffer((await files.open(principal, id)).content)).toString();
  const listed = async (principal: Principal): Promise<string[]> =>
    (await files.list(principal, { limit: 100 })).data.map((file) => file.id);

  it('records an upload with a safe name, its type or octet-stream, its purpose or null, and its uploader', async () => {
    const a = userOfNewOrganization('developer');
    const named = await storeFile(context, a, 'hello', {
      originalname: '../../etc/..\u0007passwd',
      mimetype: 'text/plain',
      purpose: 'assistants',
    });
    expect(named).toMatchObject({
      organizationId: a.organizationId,
      filename: 'passwd',
      contentType: 'text/plain',
      size: 5,
      sha256: '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
      purpose: 'assistants',
      storageKey: `${a.organizationId}/${named.id}`,
      createdBy: a.userId,
    });
    const bare = await storeFile(context, a, '', { originalname: '...', mimetype: '' });
    expect(bare).toMatchObject({
      filename: 'file',
      contentType: 'application/octet-stream',
      size: 0,
      purpose: null,
    });
    expect(await contentOf(a, named.id)).toBe('hello');
  });

  it('refuses a request without a file (file_required) and records nothing', async () => {
    const a = userOfNewOrganization();
    await expect(files.record(a, undefined)).rejects.toMatchObject({
      code: 'file_required',
      errors: [expect.objectContaining({ field: 'file' })],
    });
    expect(await listed(a)).toEqual([]);
  });

  it('removes the stored bytes when the record cannot be written', async () => {
    const a = userOfNewOrganization();
    const fileId = testId('file');
    const storageKey = `${a.organizationId}/${fileId}`;
    const { size, sha256 } = await context
      .get<FileStorage>(FILE_STORAGE)
      .write(storageKey, Readable.from([Buffer.from('orphan')]));
    const upload = { fileId, storageKey, size, sha256, originalname: 'x.txt', mimetype: 'text/plain' };
    // A purpose with a NUL character: text PostgreSQL refuses to store, after the bytes were written.
    await expect(files.record(a, upload, 'a\u0000b')).rejects.toThrow();
    expect(existsSync(join(context.config.DATA_DIR, 'files', storageKey))).toBe(false);
    expect(await listed(a)).toEqual([]);
  });

  it('deletes the record and its bytes; the file is then not found anywhere', async () => {
    const a = userOfNewOrganization();
    const file = await storeFile(context, a, 'doomed');
    expect(onDisk(file)).toBe(true);
    await files.delete(a, file.id);
    expect(onDisk(file)).toBe(false);
    await expect(files.get(a, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(files.open(a, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(files.delete(a, file.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await listed(a)).toEqual([]);
  });

  it("hides an organization's file from every other organization; their delete leaves it intact", async () => {
    const a = userOfNewOrganization();
    const b = userOfNewOrganization();
    const file = await storeFile(context, a, 'private');
    const own = await storeFile(context, b, 'own');

    await expect(files.get(b, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(files.open(b, file.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(files.delete(b, file.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await listed(b)).toEqual([own.id]);
    expect(await files.findOwned(b.organizationId, [file.id, own.id])).toEqual([own]);

    expect(onDisk(file)).toBe(true);
    expect(await contentOf(a, file.id)).toBe('private');
    expect(await listed(a)).toEqual([file.id]);
  });

  it('answers not_found for ids that are not files of the organization', async () => {
    const a = userOfNewOrganization();
    for (const id of ['file_0000000000000000000000', '../../etc/passwd', 'task_0000000000000000000000']) {
      await expect(files.open(a, id)).rejects.toMatchObject({ code: 'not_found' });
    }
  });

  it('lists newest first, page by page', async () => {
    const a = userOfNewOrganization();
    const created: string[] = [];
    for (const content of ['a', 'b', 'c']) {
      created.push((await storeFile(context, a, content)).id);
      await nextMillisecond();
    }
    const first = await files.list(a, { limit: 2 });
    expect(first.data.map((file) => file.id)).toEqual([created[2], created[1]]);
    const second = await files.list(a, { limit: 2, cursor: first.next_cursor! });
    expect(second.data.map((file) => file.id)).toEqual([created[0]]);
    expect(second.next_cursor).toBeNull();
  });

  it("finds the organization's files among ids in the order asked, skipping others and malformed ids", async () => {
    const a = userOfNewOrganization();
    const [x, y] = [await storeFile(context, a, 'x'), await storeFile(context, a, 'y')];
    const found = await files.findOwned(a.organizationId, [
      y.id,
      'not-a-file',
      x.id,
      'file_0000000000000000000000',
    ]);
    expect(found.map((file) => file.id)).toEqual([y.id, x.id]);
    expect(await files.findOwned(a.organizationId, [])).toEqual([]);
  });
});
