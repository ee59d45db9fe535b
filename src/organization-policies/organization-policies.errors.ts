import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum OrganizationPolicyErrorCode {
  /** A key's expiration breaks the organization's key policy (the problem's `rule` names which). */
  PolicyViolation = 'policy_violation',
}

export class OrganizationPolicyError extends defineDomainErrors('organization-policies', {
  [OrganizationPolicyErrorCode.PolicyViolation]: ErrorKind.InvalidInput,
}) {}
