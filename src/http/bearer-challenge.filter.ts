import type { ArgumentsHost } from '@nestjs/common';
import type { Request } from 'express';
import { AccessDenialCode } from '../access/access-denial';
import { ProblemException } from '../common/problem';
import type { Permission } from '../roles/permissions';
import { ProblemFilter } from './problem.filter';

/**
 * The key check's refusals on a resource OAuth tokens are issued for (/mcp, /a2a), answered as on REST
 * (problem+json) with the challenge of RFC 6750 §3 and RFC 9728 §5.1: a 401 names the resource's
 * metadata and the default scopes, with `invalid_token` when a credential was presented; a 403 for a
 * missing permission is `insufficient_scope` naming the permissions the call needs. A subclass names
 * its resource's metadata and what a request needs.
 */
export abstract class BearerChallengeFilter extends ProblemFilter {
  private readonly resourceMetadata: string;

  protected constructor(
    publicUrl: string,
    metadataPath: string,
    private readonly defaultScopes: readonly string[],
    private readonly permissionsOf: (request: Request) => Permission[],
  ) {
    super();
    this.resourceMetadata = `${publicUrl}${metadataPath}`;
  }

  override catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof ProblemException) {
      const challenge = this.challengeOf(exception, host.switchToHttp().getRequest());
      if (challenge) exception = withHeader(exception, 'WWW-Authenticate', challenge);
    }
    super.catch(exception, host);
  }

  private challengeOf(exception: ProblemException, request: Request): string | undefined {
    const metadata = `resource_metadata="${this.resourceMetadata}"`;
    if (exception.getStatus() === 401) {
      const presented = exception.code !== AccessDenialCode.MissingCredentials;
      return `Bearer ${presented ? 'error="invalid_token", ' : ''}${metadata}, scope="${this.defaultScopes.join(' ')}"`;
    }
    if (exception.getStatus() === 403 && exception.code === AccessDenialCode.Forbidden) {
      const held = request.principal?.permissions;
      const needed = this.permissionsOf(request).filter((permission) => !held?.has(permission));
      return `Bearer error="insufficient_scope", scope="${needed.join(' ')}", ${metadata}`;
    }
    return undefined;
  }
}

function withHeader(problem: ProblemException, name: string, value: string): ProblemException {
  const { detail } = problem.getResponse() as { detail: string };
  return new ProblemException(problem.getStatus(), problem.code, detail, problem.extensions, {
    ...problem.headers,
    [name]: value,
  });
}
