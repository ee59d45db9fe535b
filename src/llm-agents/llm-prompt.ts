import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { FileRecord } from '../files/file.entity';

/** Attachments whose text a run sends: `text/*`, `application/json` and `*+json`. */
export function isTextAttachment(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type.startsWith('text/') || type === 'application/json' || type.endsWith('+json');
}

/** The first `limit` bytes of a stored file, and whether there was more; the stream is closed early. */
async function readAtMost(content: Readable, limit: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of content as AsyncIterable<Buffer>) {
      const room = limit - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        size = limit;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    content.destroy();
  }
  return { bytes: Buffer.concat(chunks), truncated };
}

/**
 * The user's message of a run: the instruction, then each text attachment in attachment order under a
 * line naming it, within `maxBytes` of attachment text in all. The one that passes the limit is cut short
 * (at a character boundary) and named as truncated; the text attachments after it, and attachments that
 * are not text, are named as not sent, so the model knows what it did not see.
 */
export async function userMessageOf(
  instruction: string,
  attachments: readonly FileRecord[],
  read: (file: FileRecord) => Readable,
  maxBytes: number,
): Promise<string> {
  const parts = [instruction];
  const notSent: string[] = [];
  let room = maxBytes;
  for (const file of attachments) {
    if (!isTextAttachment(file.contentType)) {
      notSent.push(`${file.filename} (${file.contentType}, not text)`);
      continue;
    }
    if (room <= 0) {
      notSent.push(`${file.filename} (${file.contentType}, over the size limit)`);
      continue;
    }
    const { bytes, truncated } = await readAtMost(read(file), room);
    room -= bytes.length;
    // A cut in the middle of a character leaves its first bytes out rather than a replacement character.
    const decoder = new StringDecoder('utf8');
    const text = truncated ? decoder.write(bytes) : decoder.write(bytes) + decoder.end();
    const label = truncated ? `${file.contentType}, truncated to ${bytes.length} bytes` : file.contentType;
    parts.push(`--- attachment: ${file.filename} (${label}) ---\n${text}`);
    if (truncated) room = 0;
  }
  if (notSent.length) parts.push(`--- attachments not sent: ${notSent.join(', ')} ---`);
  return parts.join('\n\n');
}
