import { Injectable } from '@nestjs/common';
import type { Principal } from '../access/principal';
import { ApiKeyQueryService } from '../api-keys/api-key-query.service';
import { Clock } from '../common/clock';
import { IdentitiesService } from '../identities/identities.service';
import { OAuthGrants } from '../oauth/oauth-grants';
import { OAuthError, OAuthErrorCode } from '../oauth/oauth.errors';
import type {
  ClientUsageTotalResponse,
  GrantUsageResponse,
  IdentityUsageResponse,
  KeyUsageQueryDto,
  KeyUsageResponse,
  OrganizationClientUsageResponse,
  OrganizationIdentityUsageResponse,
  OrganizationUsageQueryDto,
  OrganizationUsageResponse,
  OrganizationUsageSeriesResponse,
  UsageBucketResponse,
  UsageRangeQueryDto,
} from './dto/usage.dto';
import { BucketRange, parseTimestamp } from './usage-range';
import { OutcomeCount, UsageRepository } from './usage.repository';
import { isMeasure, USAGE_MEASURES } from './usage-measures';

const ALLOWED = 'allowed';

/**
 * Reads of the hourly rollup: a key's, an identity's or an OAuth grant's buckets, and the organization's
 * keys, identities or OAuth clients by requests.
 */
@Injectable()
export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    private readonly keys: ApiKeyQueryService,
    private readonly identities: IdentitiesService,
    private readonly grants: OAuthGrants,
    private readonly clock: Clock,
  ) {}

  /** Every bucket of the range, oldest first, zeros where the key made no request. */
  async ofKey(principal: Principal, keyId: string, query: KeyUsageQueryDto): Promise<KeyUsageResponse> {
    const range = this.rangeOf(query);
    // 404 for a key of another organization (or a deleted one), never 403.
    const key = await this.keys.find(principal, keyId);
    const counts = await this.usage.countsOfKey(
      principal.organizationId,
      key.id,
      range.granularity,
      new Date(range.from),
      new Date(range.end),
    );
    return { key_id: key.id, ...bucketsOf(range, counts) };
  }

  /**
   * Every bucket of the range, oldest first: what the identity's keys did while they belonged to it
   * (a key attached later, or moved away, counts only for its time with it).
   */
  async ofIdentity(
    principal: Principal,
    identityId: string,
    query: KeyUsageQueryDto,
  ): Promise<IdentityUsageResponse> {
    const range = this.rangeOf(query);
    // 404 for an identity of another organization (or a deleted one), never 403.
    const identity = await this.identities.find(principal, identityId);
    const counts = await this.usage.countsOfIdentity(
      principal.organizationId,
      identity.id,
      range.granularity,
      new Date(range.from),
      new Date(range.end),
    );
    return { identity_id: identity.id, ...bucketsOf(range, counts) };
  }

  /**
   * Every bucket of the range, oldest first: the requests of the grant's OAuth access tokens. Visible
   * to the grant's user, or with `api_keys:read` (as GET /v1/oauth/grants lists them); any other grant
   * answers as an unknown one (404), as the grants routes do.
   */
  async ofGrant(principal: Principal, grantId: string, query: KeyUsageQueryDto): Promise<GrantUsageResponse> {
    const range = this.rangeOf(query);
    const all = principal.permissions.has('api_keys:read');
    const grant =
      all || principal.userId
        ? await this.grants.get(principal.organizationId, grantId, all ? undefined : principal.userId!)
        : null;
    if (!grant) throw new OAuthError(OAuthErrorCode.GrantNotFound, 'The grant was not found.');
    const counts = await this.usage.countsOfGrant(
      principal.organizationId,
      grant.id,
      range.granularity,
      new Date(range.from),
      new Date(range.end),
    );
    return {
      grant_id: grant.id,
      client_id: grant.client.client_id,
      client_name: grant.client.client_name,
      ...bucketsOf(range, counts),
    };
  }

  /**
   * Every bucket of the range, oldest first: what all the organization's keys did, deleted ones
   * included (their requests happened; only the per-key list needs a key to name).
   */
  async seriesOfOrganization(
    principal: Principal,
    query: KeyUsageQueryDto,
  ): Promise<OrganizationUsageSeriesResponse> {
    const range = this.rangeOf(query);
    const counts = await this.usage.countsOfOrganization(
      principal.organizationId,
      range.granularity,
      new Date(range.from),
      new Date(range.end),
    );
    return bucketsOf(range, counts);
  }

  /**
   * The organization's (non-deleted) keys used in the range, by hour, most requests first; with
   * `group_by=identity` its (non-deleted) identities instead, with `group_by=client` its OAuth clients. The key check has already required
   * identities:read for that (see the route's RequirePermissionsForQuery).
   */
  ofOrganization(
    principal: Principal,
    query: OrganizationUsageQueryDto,
  ): Promise<
    OrganizationUsageResponse | OrganizationIdentityUsageResponse | OrganizationClientUsageResponse
  > {
    if (query.group_by === 'client') return this.byClient(principal, query);
    return query.group_by === 'identity' ? this.byIdentity(principal, query) : this.byKey(principal, query);
  }

  /**
   * The OAuth clients whose grants' tokens were used in the range, summed over those grants, most
   * requests first. A grant ends by being deleted (revoked, or a refresh token replayed), and with it
   * what names its client: its usage is left out then, as a deleted key's is from the key list.
   */
  private async byClient(
    principal: Principal,
    query: UsageRangeQueryDto,
  ): Promise<OrganizationClientUsageResponse> {
    const range = this.rangeOf({ from: query.from, to: query.to, granularity: 'hour' });
    const totals = await this.usage.totalsByGrant(
      principal.organizationId,
      new Date(range.from),
      new Date(range.end),
    );
    const clientOfGrant = new Map<string, string>();
    const clientNames = new Map<string, string | null>();
    // Newest first: a client is named as its latest consent showed it.
    for (const { id, client } of await this.grants.list(principal.organizationId)) {
      clientOfGrant.set(id, client.client_id);
      if (!clientNames.has(client.client_id)) clientNames.set(client.client_id, client.client_name);
    }
    const clients = new Map<string, ClientUsageTotalResponse>();
    for (const { grantId, requests, allowed, creditsSpent } of totals) {
      const clientId = clientOfGrant.get(grantId);
      if (clientId === undefined) continue;
      let total = clients.get(clientId);
      if (!total) {
        total = {
          client_id: clientId,
          client_name: clientNames.get(clientId) ?? null,
          requests: 0,
          allowed: 0,
          denied: 0,
          credits_spent: 0,
        };
        clients.set(clientId, total);
      }
      total.requests += requests;
      total.allowed += allowed;
      total.denied += requests - allowed;
      total.credits_spent += creditsSpent;
    }
    return {
      ...rangeFields(range),
      data: [...clients.values()].sort(
        (a, b) =>
          b.requests - a.requests || (a.client_id < b.client_id ? -1 : a.client_id > b.client_id ? 1 : 0),
      ),
    };
  }

  private async byKey(principal: Principal, query: UsageRangeQueryDto): Promise<OrganizationUsageResponse> {
    const range = this.rangeOf({ from: query.from, to: query.to, granularity: 'hour' });
    const totals = await this.usage.totalsByKey(
      principal.organizationId,
      new Date(range.from),
      new Date(range.end),
    );
    // Names through the keys module (which owns api_keys); deleted keys have none and are left out.
    const names = await this.keys.namesOf(
      principal,
      totals.map((total) => total.keyId),
    );
    return {
      ...rangeFields(range),
      data: totals
        .filter(({ keyId }) => names.has(keyId))
        .map(({ keyId, requests, allowed, creditsSpent }) => ({
          key_id: keyId,
          name: names.get(keyId)!,
          requests,
          allowed,
          denied: requests - allowed,
          credits_spent: creditsSpent,
        })),
    };
  }

  private async byIdentity(
    principal: Principal,
    query: UsageRangeQueryDto,
  ): Promise<OrganizationIdentityUsageResponse> {
    const range = this.rangeOf({ from: query.from, to: query.to, granularity: 'hour' });
    const totals = await this.usage.totalsByIdentity(
      principal.organizationId,
      new Date(range.from),
      new Date(range.end),
    );
    // A deleted identity is left out, as a deleted key is: nothing could be asked about it any more
    // (GET /v1/identities/{id} and its usage are 404), and its external_id may name a new identity.
    const identities = await this.identities.summaries(
      principal.organizationId,
      totals.map((total) => total.identityId),
    );
    return {
      ...rangeFields(range),
      data: totals
        .filter(({ identityId }) => identities.has(identityId))
        .map(({ identityId, requests, allowed, creditsSpent }) => ({
          identity_id: identityId,
          external_id: identities.get(identityId)!.external_id,
          requests,
          allowed,
          denied: requests - allowed,
          credits_spent: creditsSpent,
        })),
    };
  }

  private rangeOf(query: KeyUsageQueryDto): BucketRange {
    return BucketRange.resolve(
      {
        // The DTO has validated both; parseTimestamp reads them as UTC when they carry no offset.
        from: query.from === undefined ? undefined : parseTimestamp(query.from),
        to: query.to === undefined ? undefined : parseTimestamp(query.to),
        granularity: query.granularity,
      },
      this.clock.now(),
    );
  }
}

function rangeFields(range: BucketRange): { from: string; to: string } {
  return { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() };
}

/** The range's buckets filled from the counts by bucket and outcome, with the range it answers. */
function bucketsOf(
  range: BucketRange,
  counts: readonly OutcomeCount[],
): Pick<KeyUsageResponse, 'granularity' | 'from' | 'to' | 'data'> {
  const buckets = new Map<number, UsageBucketResponse>(
    range.starts().map((start) => [start, emptyBucket(start)]),
  );
  for (const { start, outcome, count } of counts) {
    const bucket = buckets.get(start.getTime());
    if (!bucket) continue;
    const measure = MEASURE_FIELDS[outcome];
    if (measure) {
      bucket[measure] += count;
      continue;
    }
    if (isMeasure(outcome)) continue; // a measure of a later version: not a request
    bucket.requests += count;
    if (outcome === ALLOWED) {
      bucket.allowed += count;
    } else {
      bucket.denied += count;
      bucket.denied_by_reason[outcome] = (bucket.denied_by_reason[outcome] ?? 0) + count;
    }
  }
  return { granularity: range.granularity, ...rangeFields(range), data: [...buckets.values()] };
}

function emptyBucket(start: number): UsageBucketResponse {
  return {
    start: new Date(start).toISOString(),
    requests: 0,
    allowed: 0,
    denied: 0,
    denied_by_reason: {},
    tasks: 0,
    input_tokens: 0,
    output_tokens: 0,
    credits_spent: 0,
  };
}

/** The bucket field of each measure. */
const MEASURE_FIELDS: Readonly<
  Record<string, 'tasks' | 'input_tokens' | 'output_tokens' | 'credits_spent' | undefined>
> = {
  [USAGE_MEASURES.tasks]: 'tasks',
  [USAGE_MEASURES.inputTokens]: 'input_tokens',
  [USAGE_MEASURES.outputTokens]: 'output_tokens',
  [USAGE_MEASURES.creditsSpent]: 'credits_spent',
};
