import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMinSize, IsArray, IsBoolean, IsString, IsUrl, MaxLength } from 'class-validator';
import { DescriptionField, Omittable } from '../../common/validators';
import { ListQueryDto } from '../../common/pagination';
import type { WebhookDelivery } from '../webhook-delivery.entity';
import { WEBHOOK_EVENT_TYPE_SCHEMA } from '../webhook-event-types';
import type { Webhook } from '../webhook.entity';

export class CreateWebhookDto {
  @ApiProperty({ example: 'https://hooks.example.com/gatehouse', maxLength: 2000 })
  @IsString()
  @MaxLength(2000)
  @IsUrl(
    { protocols: ['http', 'https'], require_protocol: true, require_tld: false },
    { message: 'url must be an http(s) URL' },
  )
  url: string;

  // Which events exist is this app's WebhookEventTypes, an extension's included: the controller checks
  // them there, and the document's enum is written from it (describeWebhookEventTypes).
  @ApiProperty({ enum: ['key.created'], enumName: WEBHOOK_EVENT_TYPE_SCHEMA, isArray: true })
  @IsArray()
  @ArrayMinSize(1)
  events: string[];

  @DescriptionField()
  description?: string | null;

  @ApiPropertyOptional({ default: true })
  @Omittable()
  @IsBoolean()
  enabled?: boolean;
}

export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: 2000 })
  @Omittable()
  @IsString()
  @MaxLength(2000)
  @IsUrl(
    { protocols: ['http', 'https'], require_protocol: true, require_tld: false },
    { message: 'url must be an http(s) URL' },
  )
  url?: string;

  @ApiPropertyOptional({ enum: ['key.created'], enumName: WEBHOOK_EVENT_TYPE_SCHEMA, isArray: true })
  @Omittable()
  @IsArray()
  @ArrayMinSize(1)
  events?: string[];

  @DescriptionField()
  description?: string | null;

  @ApiPropertyOptional({ description: 'Re-enabling a disabled endpoint resets its failure count.' })
  @Omittable()
  @IsBoolean()
  enabled?: boolean;
}

export class WebhookResponse {
  @ApiProperty({ example: 'whk_3Fd…' }) id: string;
  @ApiProperty() url: string;
  @ApiProperty({ type: [String] }) events: string[];
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) disabled_at: string | null;
  @ApiProperty({ type: String, nullable: true }) disabled_reason: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;

  static of(webhook: Webhook): WebhookResponse {
    return {
      id: webhook.id,
      url: webhook.url,
      events: webhook.events,
      description: webhook.description,
      enabled: webhook.enabled,
      disabled_at: webhook.disabledAt?.toISOString() ?? null,
      disabled_reason: webhook.disabledReason,
      created_at: webhook.createdAt.toISOString(),
      updated_at: webhook.updatedAt.toISOString(),
    };
  }
}

export class WebhookWithSecretResponse extends WebhookResponse {
  @ApiProperty({
    description: 'The signing secret; shown only here. Verify deliveries with it.',
    example: 'whsec_…',
  })
  secret: string;
}

export class WebhookPage {
  @ApiProperty({ type: [WebhookResponse] }) data: WebhookResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class DeliveryResponse {
  @ApiProperty({ example: 'dlv_8Qe…' }) id: string;
  @ApiProperty({ description: 'Also the webhook-id header.' }) event_id: string;
  @ApiProperty({ example: 'key.created' }) event_type: string;
  @ApiProperty({ enum: ['pending', 'succeeded', 'failed'] }) status: string;
  @ApiProperty({ type: 'integer' }) attempts: number;
  @ApiProperty({ type: 'integer', nullable: true }) response_status: number | null;
  @ApiProperty({ type: String, nullable: true }) last_error: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) next_attempt_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) delivered_at: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;

  static of(delivery: WebhookDelivery): DeliveryResponse {
    return {
      id: delivery.id,
      // A webhook's deliveries (the ones listed) always have their event.
      event_id: delivery.eventId ?? '',
      event_type: delivery.eventType,
      status: delivery.status,
      attempts: delivery.attempts,
      response_status: delivery.lastResponseStatus,
      last_error: delivery.lastError,
      next_attempt_at: delivery.status === 'pending' ? (delivery.nextAttemptAt?.toISOString() ?? null) : null,
      delivered_at: delivery.deliveredAt?.toISOString() ?? null,
      created_at: delivery.createdAt.toISOString(),
    };
  }
}

export class DeliveryPage {
  @ApiProperty({ type: [DeliveryResponse] }) data: DeliveryResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}

export class ListDeliveriesQueryDto extends ListQueryDto {}
