import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IsNotBlank } from '../../../src/common/validators';
import type { Dataset } from './dataset.entity';

export class CreateDatasetDto {
  @ApiProperty({ maxLength: 100, example: 'Support tickets, 2026' })
  @IsString()
  @MinLength(1)
  @IsNotBlank()
  @MaxLength(100)
  name: string;

  @ApiPropertyOptional({ maxLength: 500, nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;
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
