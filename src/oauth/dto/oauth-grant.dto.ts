import { ApiProperty } from '@nestjs/swagger';
import type { GrantSummary } from '../oauth-grants';

export class OAuthGrantClientResponse {
  @ApiProperty() client_id: string;
  @ApiProperty({ type: String, nullable: true, description: 'The name the client registered with.' })
  client_name: string | null;
}

/** One user's consent to one client. */
export class OAuthGrantResponse {
  @ApiProperty({ example: 'grant_5JkQm2Tz8RpVw3Xy7NbLc4' }) id: string;
  @ApiProperty({ type: OAuthGrantClientResponse }) client: OAuthGrantClientResponse;
  @ApiProperty({ description: 'The user who consented: its tokens act for them.' }) user_id: string;
  @ApiProperty({ type: [String], example: ['agents:read', 'tasks:create'] }) scopes: string[];
  @ApiProperty({ example: 'https://gatehouse.example.com/mcp' }) resource: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_used_at: string | null;

  static of(grant: GrantSummary): OAuthGrantResponse {
    return { ...grant, client: { ...grant.client }, scopes: [...grant.scopes] };
  }
}

export class OAuthGrantPage {
  @ApiProperty({ type: [OAuthGrantResponse] }) data: OAuthGrantResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'Always null: every grant is on one page.' })
  next_cursor: string | null;
}
