import type { Readable } from 'node:stream';

/**
 * Where uploaded bytes live. The local driver writes under DATA_DIR; an S3-compatible driver would
 * implement the same four calls (streamed write, streamed read, delete), keyed by an opaque name.
 */
export interface FileStorage {
  /** Streams `source` to `key`; resolves with size and SHA-256 computed on the way. Leaves nothing on failure. */
  write(key: string, source: Readable): Promise<{ size: number; sha256: string }>;
  read(key: string): Readable;
  remove(key: string): Promise<void>;
}

export const FILE_STORAGE = Symbol('FILE_STORAGE');
