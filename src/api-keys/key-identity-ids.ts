import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { identityIdsOfKeys } from './api-keys.repository';

/** A key of an organization, by id. */
export interface KeyOfOrganization {
  organizationId: string;
  keyId: string;
}

/**
 * How other modules learn which identity keys belong to now, by key id (the usage meter of ended task
 * runs): the api_keys table stays behind this module. One statement for a whole batch of keys, in the
 * caller's transaction.
 */
@Injectable()
export class KeyIdentityIds {
  /**
   * The identity of each of `keys` (null: none), by key id, deleted keys too; a key that is not there
   * (or not of the organization given with it) is absent.
   */
  of(manager: EntityManager, keys: readonly KeyOfOrganization[]): Promise<Map<string, string | null>> {
    return identityIdsOfKeys(manager, keys);
  }
}

/** KeyIdentityIds alone, for the task worker (which runs no API-key routes or jobs). */
@Module({ providers: [KeyIdentityIds], exports: [KeyIdentityIds] })
export class KeyIdentityIdsModule {}
