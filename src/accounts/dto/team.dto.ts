import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches } from 'class-validator';
import { DisplayNameField } from '../../common/validators';
import type { Team } from '../team.entity';

export class CreateTeamDto {
  @DisplayNameField({ example: 'Platform' })
  name: string;
}

export class AddTeamMemberDto {
  @ApiProperty({ example: 'usr_0Fq3Vn7Kc2Hx9Tp4Rm8Wd1' })
  @IsString()
  @Matches(/^usr_[0-9A-Za-z]{22}$/, { message: 'user_id must be a user id (usr_…)' })
  user_id: string;
}

export class TeamResponse {
  @ApiProperty({ example: 'team_7hKp2Wq9ZtR4mNx8Ys3Lb6' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: [String], description: 'Ids of the members, oldest membership first.' })
  member_ids: string[];
  @ApiProperty({ format: 'date-time' }) created_at: string;

  static of(team: Team): TeamResponse {
    const members = [...(team.members ?? [])].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    return {
      id: team.id,
      name: team.name,
      member_ids: members.map((m) => m.userId),
      created_at: team.createdAt.toISOString(),
    };
  }
}

export class TeamPage {
  @ApiProperty({ type: [TeamResponse] }) data: TeamResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
