import type { Identity } from '../../identities/identity.entity';
import type { ApiKey } from '../api-key.entity';

// Types only, apart from CreditsService (credits.service.ts): the principal (src/access/principal.ts)
// carries a key's balance, and taking it from credits.service.ts would make it depend on everything the
// service injects (a cycle back to the principal).

/** What spending needs of any balance's holder, as the key check loaded it (a cached row). */
type CreditHolderFields =
  | 'id'
  | 'createdAt'
  | 'organizationId'
  | 'creditsRemaining'
  | 'creditsGeneration'
  | 'creditsRefillInterval'
  | 'creditsRefilledAt'
  | 'creditsSetAt';

/** A key's balance: with what `key.credits_low` names of the key. */
export type CreditedKey = Pick<ApiKey, CreditHolderFields | 'name' | 'type' | 'role'>;

/** An identity's balance, shared by its keys: with what `identity.credits_low` names of it. */
export type CreditedIdentity = Pick<Identity, CreditHolderFields | 'externalId'>;

/** Whose balance is spent: a key's or an identity's (told apart by the id, creditTableOf). */
export type CreditHolder = CreditedKey | CreditedIdentity;
