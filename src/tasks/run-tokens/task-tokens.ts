import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { encodeBase62 } from '../../common/ids';
import { FilesService } from '../../files/files.service';

/** Every task token starts with this: the credential step tells it from keys and access tokens by it. */
export const TASK_TOKEN_PREFIX = 'gtt_';
const TOKEN_SHAPE = /^gtt_[0-9A-Za-z]{43}$/;

/** The attempt a token was minted for. */
export interface TaskAttempt {
  taskId: string;
  /** The task's `attempts` when it was claimed: a retry is a new attempt with a new token. */
  attempt: number;
  leaseOwner: string;
}

/** What a presented token stands for now. */
export interface TaskTokenRun {
  taskId: string;
  organizationId: string;
  /** The key (`key_…`) or user (`usr_…`) that created the task: the token never does more than it. */
  createdBy: string | null;
  /** True while the token's attempt is the task's running one and its lease holds. */
  live: boolean;
  /** The task's attachments and output files: the files the token may read (only read for a live run). */
  fileIds: string[];
}

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * Task tokens (`gtt_…`): a credential per attempt of a task whose runner calls out, stored only as its
 * SHA-256 (CONTRACT, "Agent runs"). Liveness is read from the task row on every use, not cached: the
 * moment the attempt ends, is cancelled or loses its lease (another worker claimed the task, bumping
 * `attempts` and `lease_owner`), every instance refuses the token on its next request.
 */
@Injectable()
export class TaskTokens {
  constructor(
    private readonly dataSource: DataSource,
    private readonly files: FilesService,
  ) {}

  static looksLikeTaskToken(value: string): boolean {
    return value.startsWith(TASK_TOKEN_PREFIX);
  }

  /**
   * A new token for each attempt (a claimed batch), in one INSERT: by task id, usable once this resolves
   * (their hashes are stored).
   */
  async mint(attempts: readonly TaskAttempt[]): Promise<Map<string, string>> {
    const tokens = attempts.map(() => `${TASK_TOKEN_PREFIX}${encodeBase62(randomBytes(32))}`);
    if (attempts.length) {
      await this.dataSource.query(
        `INSERT INTO task_tokens (token_hash, task_id, attempt, lease_owner)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[])`,
        [
          tokens.map(hashOf),
          attempts.map((attempt) => attempt.taskId),
          attempts.map((attempt) => attempt.attempt),
          attempts.map((attempt) => attempt.leaseOwner),
        ],
      );
    }
    return new Map(attempts.map((attempt, i) => [attempt.taskId, tokens[i]]));
  }

  /** The run a token belongs to, live or not; null when no token has this value (or it is malformed). */
  async lookup(token: string): Promise<TaskTokenRun | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const [row] = await this.dataSource.query<
      {
        task_id: string;
        organization_id: string;
        created_by: string | null;
        live: boolean;
        attachments: string[];
      }[]
    >(
      `SELECT t.id AS task_id, t.organization_id, t.created_by,
              (t.status = 'running' AND t.attempts = tt.attempt AND t.lease_owner = tt.lease_owner
                AND t.lease_expires_at > now()) AS live,
              t.attachments
         FROM task_tokens tt JOIN tasks t ON t.id = tt.task_id
        WHERE tt.token_hash = $1`,
      [hashOf(token)],
    );
    if (!row) return null;
    // The output files are the files module's rows: asked of it, and only for a token that can use them.
    const outputs = row.live ? await this.files.outputIdsOf(row.organization_id, row.task_id) : [];
    return {
      taskId: row.task_id,
      organizationId: row.organization_id,
      createdBy: row.created_by,
      live: row.live,
      fileIds: [...row.attachments, ...outputs],
    };
  }
}
