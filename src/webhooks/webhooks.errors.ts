import { defineDomainErrors, ErrorKind } from '../common/domain-error';

export enum WebhookErrorCode {
  NotFound = 'not_found',
  DeliveryPending = 'delivery_pending',
}

export class WebhookError extends defineDomainErrors('webhooks', {
  [WebhookErrorCode.NotFound]: ErrorKind.NotFound,
  [WebhookErrorCode.DeliveryPending]: ErrorKind.Conflict,
}) {}
