import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { KeyLeaks } from '../api-keys/key-leaks';
import { LeakReportQueueJob } from '../api-keys/leak-report-queue.job';
import type { RequestOrigin } from '../audit/audit.service';
import { CommonError, CommonErrorCode } from '../common/common.errors';
import type { FieldError } from '../common/domain-error';
import { GitHubReportedToken, GitHubTokenLabel } from './dto/secret-scanning.dto';
import { GitHubPublicKeys } from './github-public-keys';
import { verifiesReport } from './github-signature';
import { SecretScanningError, SecretScanningErrorCode } from './secret-scanning.errors';

/** The signature headers of a GitHub report, as received (either may be missing). */
export interface ReportSignature {
  keyIdentifier: string | undefined;
  signature: string | undefined;
}

const invalidSignature = (detail: string) =>
  new SecretScanningError(SecretScanningErrorCode.InvalidSignature, detail);

/**
 * Leak reports: GitHub's secret-scanning partner reports (signed) and anyone's public report
 * (POST /v1/credentials/revoke). Both end in KeyLeaks, which applies each organization's leak_response.
 */
@Injectable()
export class SecretScanningService {
  constructor(
    private readonly publicKeys: GitHubPublicKeys,
    private readonly leaks: KeyLeaks,
    private readonly queue: LeakReportQueueJob,
  ) {}

  /**
   * A GitHub report: the signature over the raw body first (nothing is read or changed for an unsigned
   * or forged report), then the tokens, all looked up at once.
   */
  async github(
    rawBody: Buffer | undefined,
    body: unknown,
    { keyIdentifier, signature }: ReportSignature,
    origin: RequestOrigin,
  ): Promise<GitHubTokenLabel[]> {
    if (!keyIdentifier || !signature) {
      throw invalidSignature(
        'The report must carry Github-Public-Key-Identifier and Github-Public-Key-Signature.',
      );
    }
    const key = await this.publicKeys.lookup(keyIdentifier);
    if (!key.found) {
      if (key.unavailable) {
        throw new SecretScanningError(
          SecretScanningErrorCode.SignatureKeysUnavailable,
          "GitHub's secret-scanning public keys could not be read; the report cannot be checked now.",
          { retryAfterSeconds: 60 },
        );
      }
      throw invalidSignature('The report is signed with a key GitHub does not publish.');
    }
    if (!rawBody || !verifiesReport(rawBody, signature, key.found)) {
      throw invalidSignature('The signature does not match the report.');
    }
    const tokens = parseReport(body);
    const named = await this.leaks.report(
      'github',
      tokens.map(({ token, url }) => ({ value: token, url: url ?? null })),
      origin,
    );
    return tokens.map(({ token, type }, i) => ({
      token_hash: createHash('sha256').update(token, 'utf8').digest('hex'),
      token_type: type,
      label: named[i] ? 'true_positive' : 'false_positive',
    }));
  }

  /**
   * A public report: whatever it holds, the caller learns nothing (the controller answers 202). The
   * answer waits only for the report to be stored, the same work whatever the values name; looking the
   * keys up and applying leak_responses come after, off the request: done before the answer, their
   * cost made its timing tell a live key (16.6 ms) from a made-up value (4.7 ms).
   */
  async publicReport(credentials: string[], origin: RequestOrigin): Promise<void> {
    await this.leaks.queue('public_report', credentials, origin);
    this.queue.kick();
  }
}

/** A report's tokens, checked by hand: GitHub may add fields, which are ignored, not refused. */
function parseReport(body: unknown): GitHubReportedToken[] {
  if (!Array.isArray(body)) {
    throw new CommonError(CommonErrorCode.ValidationFailed, 'A report is a JSON array of tokens.', {
      errors: [{ field: 'body', message: 'must be an array' }],
    });
  }
  const errors: FieldError[] = [];
  const tokens = body.map((item: unknown, i): GitHubReportedToken => {
    const entry = (item && typeof item === 'object' ? item : {}) as Record<string, unknown>;
    for (const field of ['token', 'type'] as const) {
      if (typeof entry[field] !== 'string')
        errors.push({ field: `[${i}].${field}`, message: 'must be a string' });
    }
    for (const field of ['url', 'source'] as const) {
      if (entry[field] !== undefined && entry[field] !== null && typeof entry[field] !== 'string') {
        errors.push({ field: `[${i}].${field}`, message: 'must be a string' });
      }
    }
    return {
      token: entry.token as string,
      type: entry.type as string,
      url: (entry.url as string | null | undefined) ?? undefined,
      source: (entry.source as string | null | undefined) ?? undefined,
    };
  });
  if (errors.length) {
    throw new CommonError(CommonErrorCode.ValidationFailed, 'The report has malformed tokens.', {
      errors: errors.slice(0, 20),
    });
  }
  return tokens;
}
