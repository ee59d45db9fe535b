import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import type { FileRecord } from '../file.entity';

export class UploadFileDto {
  @ApiPropertyOptional({ maxLength: 100, example: 'task_input' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  purpose?: string;
}

/** The multipart form, for the OpenAPI document. */
export class UploadFileForm {
  @ApiProperty({ type: 'string', format: 'binary' }) file: unknown;
  @ApiPropertyOptional({ maxLength: 100 }) purpose?: string;
}

export class FileResponse {
  @ApiProperty({ example: 'file_9aZ…' }) id: string;
  @ApiProperty({ example: 'report.pdf' }) filename: string;
  @ApiProperty({ example: 'application/pdf' }) content_type: string;
  @ApiProperty({ type: 'integer', description: 'Bytes.' }) size: number;
  @ApiProperty({ description: 'Hex SHA-256 of the content.' }) sha256: string;
  @ApiProperty({ type: String, nullable: true }) purpose: string | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;

  static of(file: FileRecord): FileResponse {
    return {
      id: file.id,
      filename: file.filename,
      content_type: file.contentType,
      size: file.size,
      sha256: file.sha256,
      purpose: file.purpose,
      created_at: file.createdAt.toISOString(),
    };
  }
}

export class FilePage {
  @ApiProperty({ type: [FileResponse] }) data: FileResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
