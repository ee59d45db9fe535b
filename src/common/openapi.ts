import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { STATUS_CODES } from 'node:http';

export class FieldErrorSchema {
  @ApiProperty({ example: 'name' }) field: string;
  @ApiProperty({ example: 'name must be shorter than or equal to 100 characters' }) message: string;
}

/** RFC 9457 body of every error, documented once. */
export class ProblemSchema {
  @ApiProperty({ example: 'urn:gatehouse:problem:validation_failed' }) type: string;
  @ApiProperty({ example: 'Bad Request' }) title: string;
  @ApiProperty({ example: 400 }) status: number;
  @ApiProperty() detail: string;
  @ApiProperty({ example: 'validation_failed', description: 'Stable machine-readable error code.' })
  code: string;
  @ApiProperty({ example: 'req_6f1c…' }) request_id: string;
  @ApiPropertyOptional({ type: [FieldErrorSchema] }) errors?: FieldErrorSchema[];
}

/** Documents the problem+json answers a route can give, e.g. `@ApiProblems(400, 401, 403)`. */
export function ApiProblems(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: STATUS_CODES[status],
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/ProblemSchema' } } },
      }),
    ),
  );
}
