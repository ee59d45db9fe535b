import { ApiProperty } from '@nestjs/swagger';
import type { Organization } from '../organization.entity';

export class OrganizationResponse {
  @ApiProperty({ example: 'org_2bT…' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;

  static of(organization: Organization): OrganizationResponse {
    return { id: organization.id, name: organization.name, created_at: organization.createdAt.toISOString() };
  }
}
