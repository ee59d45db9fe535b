/**
 * What a model agent needs of the organization's secrets (OrganizationSecrets, src/organization-secrets):
 * whether one exists, for an agent's config, and its value, for a run. Named here so the runner depends on
 * these two calls only.
 */
export interface ProviderSecrets {
  exists(organizationId: string, secretId: string): Promise<boolean>;
  /** The value, for the run's request only; undefined when the secret is gone. Marks it used. */
  reveal(organizationId: string, secretId: string): Promise<string | undefined>;
}

export const PROVIDER_SECRETS = Symbol('PROVIDER_SECRETS');
