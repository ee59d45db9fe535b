import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Response, Test } from 'supertest';
import {
  createUser,
  CreatedUser,
  expectProblem,
  firstTwoPages,
  listAll,
  signUpOrganization,
  SignedUpOrganization,
} from './support/factories';
import { pollUntil } from './support/keys';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Files: multipart upload streamed to storage under DATA_DIR/files, download, list, delete, the size
 * limit (nothing kept beyond it), filename sanitising and permissions. Organization scoping and what
 * FilesService itself keeps or removes are test/medium/files.medium-spec.ts's.
 *
 * One instance with MAX_FILE_SIZE=1024, so the limit is reached with small bodies.
 */

const MAX = 1024;
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Every regular file under `dir`, as paths relative to it (empty when `dir` does not exist). */
function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath ?? (entry as any).path, entry.name)))
    .sort();
}

/** Reads a download's body as bytes, whatever its content type. */
const asBytes = (test: Test): Test =>
  test.buffer(true).parse((res, callback) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => callback(null, Buffer.concat(chunks)));
  });

interface RawPart {
  name: string;
  /** Raw Content-Disposition parameters after `name`, e.g. `; filename="a.txt"`. */
  dispositionParams?: string;
  contentType?: string;
  body: Buffer | string;
}

/** A multipart/form-data body built by hand, so part headers reach the server exactly as written. */
function multipart(parts: RawPart[]): { body: Buffer; contentType: string } {
  const boundary = `----gatehouse${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${part.dispositionParams ?? ''}\r\n`;
    if (part.contentType) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`, 'latin1'), Buffer.from(part.body), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('files', () => {
  let t: TestApp;
  let org: SignedUpOrganization;
  let viewer: CreatedUser;
  let filesDir: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { MAX_FILE_SIZE: String(MAX) } });
    org = await signUpOrganization(t.http, 'Files');
    viewer = await createUser(t.http, org, 'viewer');
    filesDir = join(t.dataDir, 'files');
  });
  afterAll(async () => {
    await t?.close();
  });

  const upload = (
    auth: { Authorization: string },
    bytes: Buffer,
    filename: string,
    options: { contentType?: string; purpose?: string } = {},
  ): Test => {
    const req = t.http.post('/v1/files').set(auth);
    if (options.purpose !== undefined) req.field('purpose', options.purpose);
    return req.attach('file', bytes, {
      filename,
      contentType: options.contentType ?? 'application/octet-stream',
    });
  };

  const uploadRaw = (auth: { Authorization: string }, parts: RawPart[]): Test => {
    const { body, contentType } = multipart(parts);
    return t.http.post('/v1/files').set(auth).set('Content-Type', contentType).send(body);
  };

  const fileIds = async (auth: { Authorization: string }): Promise<string[]> =>
    (await listAll(t.http, '/v1/files', auth)).map((file: any) => file.id);

  /** Runs `act`, which must not keep anything: same list, same files on disk, no leftover partials. */
  async function expectNothingKept(act: () => Promise<void>): Promise<void> {
    const listedBefore = await fileIds(org.auth);
    const onDiskBefore = walk(filesDir);
    await act();
    expect(await fileIds(org.auth)).toEqual(listedBefore);
    // When a pipe rejects the request, Nest's FileInterceptor removes the stored file once the response
    // has been sent, so the removal may land just after the 400 reaches us.
    const { value: onDiskAfter } = await pollUntil(
      async () => walk(filesDir),
      (files) => files.length === onDiskBefore.length,
      { timeoutMs: 2000 },
    );
    expect(onDiskAfter).toEqual(onDiskBefore);
    expect(onDiskAfter.filter((path) => path.endsWith('.partial'))).toEqual([]);
  }

  describe('upload and download', () => {
    it('stores a small file and answers its record, then serves the identical bytes', async () => {
      const bytes = Buffer.concat([Buffer.from('hello, gatehouse\n'), randomBytes(200)]);
      const res = await upload(org.auth, bytes, 'report.bin', {
        contentType: 'application/x-gatehouse-test',
        purpose: 'task_input',
      }).expect(201);

      expect(res.body).toEqual({
        id: expect.stringMatching(/^file_[0-9A-Za-z]{22}$/),
        filename: 'report.bin',
        content_type: 'application/x-gatehouse-test',
        size: bytes.length,
        sha256: sha256(bytes),
        purpose: 'task_input',
        created_at: expect.any(String),
      });
      expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);

      // The bytes are on disk under the organization, named by the id, not by the client's name.
      expect(walk(filesDir)).toContain(join(org.organizationId, res.body.id));

      const got = await t.http.get(`/v1/files/${res.body.id}`).set(org.auth).expect(200);
      expect(got.body).toEqual(res.body);

      const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
        200,
      );
      expect(Buffer.compare(download.body as Buffer, bytes)).toBe(0);
      expect(download.headers['content-type']).toBe('application/x-gatehouse-test');
      expect(download.headers['content-length']).toBe(String(bytes.length));
      expect(download.headers['content-disposition']).toMatch(/^attachment; filename="report\.bin"/);
    });

    it('without a purpose, records purpose null', async () => {
      const bytes = Buffer.from('no purpose');
      const res = await upload(org.auth, bytes, 'plain.txt', { contentType: 'text/plain' }).expect(201);
      expect(res.body).toMatchObject({ filename: 'plain.txt', content_type: 'text/plain', purpose: null });
      const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
        200,
      );
      expect((download.body as Buffer).toString()).toBe('no purpose');
    });

    it('stores an empty file', async () => {
      const res = await upload(org.auth, Buffer.alloc(0), 'empty.txt').expect(201);
      expect(res.body).toMatchObject({ filename: 'empty.txt', size: 0, sha256: EMPTY_SHA256 });
      const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
        200,
      );
      expect((download.body as Buffer).length).toBe(0);
      expect(download.headers['content-length']).toBe('0');
    });

    it('accepts a file of exactly MAX_FILE_SIZE bytes', async () => {
      const bytes = randomBytes(MAX);
      const res = await upload(org.auth, bytes, 'exact.bin').expect(201);
      expect(res.body).toMatchObject({ size: MAX, sha256: sha256(bytes) });
      const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
        200,
      );
      expect(Buffer.compare(download.body as Buffer, bytes)).toBe(0);
    });

    it('refuses a file one byte over MAX_FILE_SIZE with 413 and keeps nothing', async () => {
      await expectNothingKept(async () => {
        const res = await upload(org.auth, randomBytes(MAX + 1), 'over.bin', { purpose: 'too big' });
        expectProblem(res, 413, 'payload_too_large');
      });
    });

    it('refuses a much larger file with 413 and keeps nothing', async () => {
      await expectNothingKept(async () => {
        const res = await upload(org.auth, randomBytes(MAX * 64), 'huge.bin').catch(
          // The server may answer before it has read the whole body; the client can then see the
          // connection reset instead of the answer. Either way nothing may be kept.
          (error: Error & { response?: Response }) => error.response ?? null,
        );
        if (res) expectProblem(res, 413, 'payload_too_large');
      });
    });
  });

  describe('filenames', () => {
    const badNames: [label: string, params: string][] = [
      ['a relative path', '; filename="../../etc/passwd"'],
      ['a Windows path', '; filename="..\\..\\win.ini"'],
      ['an absolute path', '; filename="/etc/shadow"'],
      ['a leading dot', '; filename=".env"'],
      ['control characters and quotes (RFC 5987)', "; filename*=UTF-8''ev%00il%01%0D%0A%22name%22%7F.txt"],
      ['a traversal in filename*', "; filename*=UTF-8''..%2F..%2Fescape.txt"],
      ['a 300-character name', `; filename="${'n'.repeat(296)}.txt"`],
    ];

    it.each(badNames)(
      'sanitises %s and writes nothing outside the storage directory',
      async (_label, params) => {
        const onDiskBefore = walk(t.dataDir);
        const bytes = randomBytes(32);
        const res = await uploadRaw(org.auth, [
          { name: 'file', dispositionParams: params, contentType: 'text/plain', body: bytes },
        ]).expect(201);

        const name: string = res.body.filename;
        expect(name.length).toBeGreaterThan(0);
        expect(name.length).toBeLessThanOrEqual(255);
        expect(name).not.toMatch(/[/\\]/);
        expect(name).not.toMatch(/^\./);
        // eslint-disable-next-line no-control-regex
        expect(name).not.toMatch(/[\u0000-\u001f\u007f"]/);
        expect(res.body).toMatchObject({ size: 32, sha256: sha256(bytes) });

        // Exactly one new file, inside DATA_DIR/files/<organization>/, named by the id.
        const added = walk(t.dataDir).filter((path) => !onDiskBefore.includes(path));
        expect(added).toEqual([join('files', org.organizationId, res.body.id)]);

        const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
          200,
        );
        expect(Buffer.compare(download.body as Buffer, bytes)).toBe(0);
        const disposition = download.headers['content-disposition'];
        expect(disposition).toMatch(/^attachment; filename="[^"/\\]*"/);
        expect(disposition).not.toMatch(/[\r\n]/);
      },
    );

    it('keeps the last path segment only and drops control characters', async () => {
      const names: string[] = [];
      for (const params of [
        '; filename="../../etc/passwd"',
        '; filename="..\\..\\win.ini"',
        '; filename=".env"',
        "; filename*=UTF-8''ev%00il%01%0D%0A%22name%22%7F.txt",
        `; filename="${'n'.repeat(296)}.txt"`,
      ]) {
        const res = await uploadRaw(org.auth, [
          { name: 'file', dispositionParams: params, body: 'x' },
        ]).expect(201);
        names.push(res.body.filename);
      }
      expect(names).toEqual(['passwd', 'win.ini', 'env', 'evilname.txt', 'n'.repeat(255)]);
      // Nothing named after the client's paths exists anywhere near the data directory.
      for (const path of [join(t.dataDir, 'etc', 'passwd'), join(dirname(t.dataDir), 'etc', 'passwd')]) {
        expect(existsSync(path)).toBe(false);
      }
      expect(walk(t.dataDir).filter((path) => /passwd|win\.ini/.test(path))).toEqual([]);
    });

    it('serves a non-ASCII name with an ASCII fallback and the UTF-8 name', async () => {
      const res = await upload(org.auth, Buffer.from('ü'), 'résumé.txt').expect(201);
      expect(res.body.filename).toBe('résumé.txt');
      const download = await asBytes(t.http.get(`/v1/files/${res.body.id}/content`).set(org.auth)).expect(
        200,
      );
      expect(download.headers['content-disposition']).toBe(
        `attachment; filename="r_sum_.txt"; filename*=UTF-8''${encodeURIComponent('résumé.txt')}`,
      );
    });
  });

  describe('malformed uploads', () => {
    it('multipart without a file field → 400 file_required, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await t.http.post('/v1/files').set(org.auth).field('purpose', 'lonely');
        const problem = expectProblem(res, 400, 'file_required');
        expect(problem.errors).toEqual([expect.objectContaining({ field: 'file' })]);
      });
    });

    it('a JSON body instead of multipart → 400, nothing kept', async () => {
      await expectNothingKept(async () => {
        expectProblem(
          await t.http.post('/v1/files').set(org.auth).send({ purpose: 'json' }),
          400,
          'file_required',
        );
        // A file smuggled into JSON is no file either (the unknown property is refused).
        const res = await t.http
          .post('/v1/files')
          .set(org.auth)
          .send({ file: Buffer.from('not a file').toString('base64'), purpose: 'json' });
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      });
    });

    it('two files in the field "file" → 400, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await t.http
          .post('/v1/files')
          .set(org.auth)
          .attach('file', Buffer.from('first'), 'first.txt')
          .attach('file', Buffer.from('second'), 'second.txt');
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      });
    });

    it('a file under another field name → 400, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await t.http
          .post('/v1/files')
          .set(org.auth)
          .attach('upload', Buffer.from('misplaced'), 'm.txt');
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      });
    });

    it('a right file followed by a file under another field name → 400, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await t.http
          .post('/v1/files')
          .set(org.auth)
          .attach('file', randomBytes(512), 'good.bin')
          .attach('other', Buffer.from('extra'), 'extra.txt');
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      });
    });

    it('a purpose over 100 characters → 400, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await upload(org.auth, Buffer.from('x'), 'x.txt', { purpose: 'p'.repeat(101) });
        expectProblem(res, 400, 'validation_failed');
      });
    });
  });

  describe('list, get, delete', () => {
    it('lists newest first and pages with a cursor', async () => {
      const a = await upload(org.auth, Buffer.from('a'), 'a.txt').expect(201);
      const b = await upload(org.auth, Buffer.from('b'), 'b.txt').expect(201);
      const [first, second] = await firstTwoPages(t.http, '/v1/files', org.auth, 1);
      expect(first.body.data.map((f: any) => f.id)).toEqual([b.body.id]);
      expect(second.body.data.map((f: any) => f.id)).toEqual([a.body.id]);
      expect(second.body.data[0]).toEqual(a.body);
    });

    it('deletes a file: 204, then 404 everywhere, and its bytes are gone from disk', async () => {
      const res = await upload(org.auth, randomBytes(100), 'doomed.bin').expect(201);
      const id: string = res.body.id;
      const storedPath = join(filesDir, org.organizationId, id);
      expect(existsSync(storedPath)).toBe(true);

      await t.http.delete(`/v1/files/${id}`).set(org.auth).expect(204);

      expectProblem(await t.http.get(`/v1/files/${id}`).set(org.auth), 404, 'not_found');
      expectProblem(await t.http.get(`/v1/files/${id}/content`).set(org.auth), 404, 'not_found');
      expectProblem(await t.http.delete(`/v1/files/${id}`).set(org.auth), 404, 'not_found');
      expect(await fileIds(org.auth)).not.toContain(id);
      expect(existsSync(storedPath)).toBe(false);
      expect(walk(filesDir).filter((path) => path.includes(id))).toEqual([]);
    });

    it('answers 404 for an unknown or malformed id', async () => {
      expectProblem(
        await t.http.get('/v1/files/file_0000000000000000000000').set(org.auth),
        404,
        'not_found',
      );
      expectProblem(await t.http.get('/v1/files/..%2F..%2Fetc%2Fpasswd').set(org.auth), 404, 'not_found');
      expectProblem(await t.http.get('/v1/files/not-an-id/content').set(org.auth), 404, 'not_found');
    });
  });

  describe('permissions', () => {
    it('a viewer can list, get and download, but not upload (403, nothing kept) or delete', async () => {
      const res = await upload(org.auth, Buffer.from('shared'), 'shared.txt').expect(201);
      const id: string = res.body.id;

      expect(await fileIds(viewer.auth)).toContain(id);
      await t.http.get(`/v1/files/${id}`).set(viewer.auth).expect(200);
      const download = await asBytes(t.http.get(`/v1/files/${id}/content`).set(viewer.auth)).expect(200);
      expect((download.body as Buffer).toString()).toBe('shared');

      await expectNothingKept(async () => {
        expectProblem(await upload(viewer.auth, Buffer.from('nope'), 'nope.txt'), 403, 'forbidden');
      });
      expectProblem(await t.http.delete(`/v1/files/${id}`).set(viewer.auth), 403, 'forbidden');
      await t.http.get(`/v1/files/${id}`).set(org.auth).expect(200);
    });

    it('without a credential → 401, nothing kept', async () => {
      await expectNothingKept(async () => {
        const res = await t.http.post('/v1/files').attach('file', Buffer.from('anon'), 'anon.txt');
        expect(res.status).toBe(401);
      });
    });
  });
});
