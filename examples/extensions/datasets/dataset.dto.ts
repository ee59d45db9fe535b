import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { DescriptionField, IsNotBlank, Omittable } from '../../../src/common/validators';
import { EventActor } from '../../../src/events/event-payloads.dto';
import type { Dataset } from './dataset.entity';

export class CreateDatasetDto {
  @ApiProperty({ maxLength: 100, example: 'Support tickets, 2026' })
  @IsString()
  @MinLength(1)
  @IsNotBlank()
  @MaxLength(100)
  name: string;

  @DescriptionField()
  description?: string | null;
}

/** PATCH: only the fields given change. */
export class UpdateDatasetDto {
  @ApiPropertyOptional({ maxLength: 100 })
  @Omittable()
  @IsString()
  @MinLength(1)
  @IsNotBlank()
  @MaxLength(100)
  name?: string;

  @DescriptionField()
  description?: string | null;
}

/**
 * The `data` of a `dataset.created` webhook event (declared on WebhookEventTypes by DatasetsModule, so
 * the OpenAPI document's `webhooks` section describes it). Its properties say their schema themselves:
 * the Swagger plugin reads only the core's files.
 */
export class DatasetCreatedData {
  @ApiProperty({ example: 'ds_5JkQm2Tz8RpVw3Xy7NbLc4' }) dataset_id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: EventActor }) actor: EventActor;
}

export class DatasetResponse {
  @ApiProperty({ example: 'ds_5JkQm2Tz8RpVw3Xy7NbLc4' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) created_at: string;

  static of(dataset: Dataset): DatasetResponse {
    return {
      id: dataset.id,
      name: dataset.name,
      description: dataset.description,
      created_at: dataset.createdAt.toISOString(),
    };
  }
}

export class DatasetPage {
  @ApiProperty({ type: [DatasetResponse] }) data: DatasetResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
