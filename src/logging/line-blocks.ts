import pino from 'pino';

/** A block is written once its lines reach this many characters (about as many bytes: JSON lines are ASCII). */
const BLOCK_LENGTH = 4096;
/** Lines are written at least this often when traffic is too light to fill a block. */
const FLUSH_EVERY_MS = 100;

/**
 * JSON lines gathered into blocks of about 4 KiB in front of a synchronous sonic-boom (pino.destination),
 * which writes each block as it comes: one write(2) per block instead of one per line, and still
 * sonic-boom's handling of a full pipe (EAGAIN) and of partial writes.
 *
 * Why not sonic-boom's own gathering (`minLength`): on every line it measures the byte length of the
 * block gathered so far (`Buffer.byteLength` of the last buffered string, sonic-boom 4.2, `write`), so a
 * line costs more the fuller the block is: 1.7 µs of a request line's 3.5 in `npm run bench:observation`.
 * Here a line costs an array push and a length sum.
 */
export class LineBlocks implements pino.DestinationStream {
  private lines: string[] = [];
  private length = 0;

  constructor(private readonly output: pino.DestinationStream & { flushSync(): void }) {
    // Unref'd: a quiet process is not kept alive for its log; what is left is written at exit.
    setInterval(() => this.flush(), FLUSH_EVERY_MS).unref();
  }

  write(line: string): void {
    this.lines.push(line);
    this.length += line.length;
    if (this.length >= BLOCK_LENGTH) this.flush();
  }

  /** Writes what is gathered; `done` once written (pino's `logger.flush(cb)` calls this). */
  flush(done?: (error?: Error) => void): void {
    if (this.lines.length) {
      const block = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
      this.lines = [];
      this.length = 0;
      this.output.write(block);
    }
    done?.();
  }

  /** Writes what is gathered and waits for it to be written (at exit). */
  flushSync(): void {
    this.flush();
    this.output.flushSync();
  }
}

/** Blocks of lines written synchronously to `dest` (a file descriptor or path), as standard output is. */
export function lineBlocksTo(dest: number | string): LineBlocks {
  return new LineBlocks(pino.destination({ dest, sync: true }));
}
