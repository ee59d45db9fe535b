import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import { isIdOf, newId } from '../common/ids';
import { ListQueryDto, Page } from '../common/pagination';
import { isUniqueViolation } from '../database/database-errors';
import {
  CreateOrganizationSecretDto,
  last4Of,
  OrganizationSecretResponse,
  UpdateOrganizationSecretDto,
} from './dto/organization-secret.dto';
import type { OrganizationSecret } from './organization-secret.entity';
import {
  ORGANIZATION_SECRET_ID,
  type OrganizationSecretAuditAction,
} from './organization-secrets.declarations';
import { OrganizationSecretError, OrganizationSecretErrorCode } from './organization-secrets.errors';
import { OrganizationSecretsRepository } from './organization-secrets.repository';
import { SecretReferences } from './secret-references';
import { SecretSealer } from './secret-sealer';

const NAME_KEY = 'organization_secrets_organization_name_key';

/**
 * The secrets API's work: create, list, read, rename or replace, delete. Each change commits with its
 * audit entry, whose details name the secret and the fields changed, never the value. No event is
 * emitted: a webhook has no business knowing a secret changed beyond the audit log.
 */
@Injectable()
export class OrganizationSecretsService {
  constructor(
    private readonly secrets: OrganizationSecretsRepository,
    private readonly sealer: SecretSealer,
    private readonly references: SecretReferences,
    private readonly audit: AuditService,
  ) {}

  async create(
    principal: Principal,
    dto: CreateOrganizationSecretDto,
    origin: RequestOrigin,
  ): Promise<OrganizationSecretResponse> {
    const secret = this.secrets.newSecret({
      id: newId(ORGANIZATION_SECRET_ID),
      organizationId: principal.organizationId,
      name: dto.name,
      sealedValue: this.sealer.seal(dto.value),
      last4: last4Of(dto.value),
      lastUsedAt: null,
    });
    try {
      const saved = await this.secrets.transaction(async (manager) => {
        const row = await this.secrets.save(manager, secret);
        await this.record(manager, principal, row, 'secret.created', {}, origin);
        return row;
      });
      return OrganizationSecretResponse.of(saved);
    } catch (error) {
      if (isUniqueViolation(error, NAME_KEY)) throw nameTaken();
      throw error;
    }
  }

  async list(principal: Principal, query: ListQueryDto): Promise<Page<OrganizationSecretResponse>> {
    const page = await this.secrets.page(principal.organizationId, query);
    return {
      data: page.data.map((secret) => OrganizationSecretResponse.of(secret)),
      next_cursor: page.next_cursor,
    };
  }

  async get(principal: Principal, id: string): Promise<OrganizationSecretResponse> {
    return OrganizationSecretResponse.of(await this.find(principal, id));
  }

  async update(
    principal: Principal,
    id: string,
    dto: UpdateOrganizationSecretDto,
    origin: RequestOrigin,
  ): Promise<OrganizationSecretResponse> {
    const existing = await this.find(principal, id);
    const fields = (['name', 'value'] as const).filter((field) => dto[field] !== undefined);
    // Nothing to change: no write, no audit entry.
    if (!fields.length) return OrganizationSecretResponse.of(existing);
    try {
      const saved = await this.secrets.transaction(async (manager) => {
        const secret = await this.secrets.lockInOrganization(manager, principal.organizationId, id);
        if (!secret) throw notFound();
        if (dto.name !== undefined) secret.name = dto.name;
        if (dto.value !== undefined) {
          secret.sealedValue = this.sealer.seal(dto.value);
          secret.last4 = last4Of(dto.value);
        }
        const row = await this.secrets.save(manager, secret);
        await this.record(manager, principal, row, 'secret.updated', { fields }, origin);
        return row;
      });
      return OrganizationSecretResponse.of(saved);
    } catch (error) {
      if (isUniqueViolation(error, NAME_KEY)) throw nameTaken();
      throw error;
    }
  }

  /** Refused (409 secret_in_use) while a registered check (SecretReferences) says something names it. */
  async delete(principal: Principal, id: string, origin: RequestOrigin): Promise<void> {
    await this.find(principal, id);
    await this.secrets.transaction(async (manager) => {
      // Locked so a concurrent rename or replace does not interleave; a module naming the secret
      // checks `exists` when it does, so the window is that of its own write.
      const secret = await this.secrets.lockInOrganization(manager, principal.organizationId, id);
      if (!secret) throw notFound();
      if (await this.references.inUse(principal.organizationId, id, manager)) {
        throw new OrganizationSecretError(
          OrganizationSecretErrorCode.SecretInUse,
          'An agent still names this secret; change or delete the agent first.',
        );
      }
      await this.secrets.delete(manager, principal.organizationId, id);
      await this.record(manager, principal, secret, 'secret.deleted', {}, origin);
    });
  }

  /** The secret must exist in the caller's organization (404 otherwise, never 403). */
  private async find(principal: Principal, id: string): Promise<OrganizationSecret> {
    const secret = isIdOf(ORGANIZATION_SECRET_ID, id)
      ? await this.secrets.findInOrganization(principal.organizationId, id)
      : null;
    if (!secret) throw notFound();
    return secret;
  }

  /** The audit entry of a change, in its transaction: the secret's id and name, never its value. */
  private async record(
    manager: EntityManager,
    principal: Principal,
    secret: Pick<OrganizationSecret, 'id' | 'name'>,
    action: OrganizationSecretAuditAction,
    details: Record<string, unknown>,
    origin: RequestOrigin,
  ): Promise<void> {
    await this.audit.append(manager, [
      {
        organizationId: principal.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { secret_id: secret.id, name: secret.name, ...details },
      },
    ]);
  }
}

function notFound(): OrganizationSecretError {
  return new OrganizationSecretError(OrganizationSecretErrorCode.NotFound, 'The secret was not found.');
}

function nameTaken(): OrganizationSecretError {
  return new OrganizationSecretError(
    OrganizationSecretErrorCode.SecretNameTaken,
    'A secret with this name already exists in the organization.',
    { errors: [{ field: 'name', message: 'name is taken' }] },
  );
}
