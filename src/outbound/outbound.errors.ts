import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum OutboundErrorCode {
  /** A configured URL that outbound calls may not reach (loopback, private, link-local, unparseable). */
  TargetNotAllowed = 'target_not_allowed',
}

export class OutboundTargetError extends defineDomainErrors('outbound', {
  [OutboundErrorCode.TargetNotAllowed]: ErrorKind.InvalidInput,
}) {}
