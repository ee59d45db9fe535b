import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Principal } from '../access/principal';
import { isIdOf, newId } from '../common/ids';
import { Page, paginate } from '../common/pagination';
import { ListQueryDto } from '../common/pagination';
import { isUniqueViolation } from '../database/database-errors';
import { CreateTeamDto } from './dto/team.dto';
import { TeamMember } from './team-member.entity';
import { Team } from './team.entity';
import { User } from './user.entity';
import { AccountError, AccountErrorCode } from './accounts.errors';

@Injectable()
export class TeamsService {
  constructor(
    @InjectRepository(Team) private readonly teams: Repository<Team>,
    @InjectRepository(TeamMember) private readonly members: Repository<TeamMember>,
    @InjectRepository(User) private readonly users: Repository<User>,
  ) {}

  /** Whether the team exists in the organization (team keys name one). */
  exists(organizationId: string, teamId: string): Promise<boolean> {
    return isIdOf('team', teamId)
      ? this.teams.existsBy({ id: teamId, organizationId })
      : Promise.resolve(false);
  }

  async create(principal: Principal, dto: CreateTeamDto): Promise<Team> {
    try {
      const team = await this.teams.save(
        this.teams.create({ id: newId('team'), organizationId: principal.organizationId, name: dto.name }),
      );
      team.members = [];
      return team;
    } catch (error) {
      if (isUniqueViolation(error, 'teams_organization_name_key')) {
        throw new AccountError(AccountErrorCode.TeamNameTaken, `A team named "${dto.name}" already exists.`);
      }
      throw error;
    }
  }

  async list(principal: Principal, query: ListQueryDto): Promise<Page<Team>> {
    const page = await paginate(
      this.teams
        .createQueryBuilder('team')
        .where('team.organization_id = :organizationId', { organizationId: principal.organizationId }),
      query,
    );
    await this.loadMembers(page.data);
    return page;
  }

  async get(principal: Principal, id: string): Promise<Team> {
    const team = isIdOf('team', id)
      ? await this.teams.findOne({
          where: { id, organizationId: principal.organizationId },
          relations: { members: true },
        })
      : null;
    if (!team) throw new AccountError(AccountErrorCode.NotFound, 'The team was not found.');
    return team;
  }

  async addMember(principal: Principal, teamId: string, userId: string): Promise<Team> {
    const team = await this.get(principal, teamId);
    const user = await this.users.findOneBy({ id: userId, organizationId: principal.organizationId });
    if (!user) throw new AccountError(AccountErrorCode.NotFound, 'The user was not found.');
    // Adding an existing member is a no-op, so a retried request is safe.
    await this.members.createQueryBuilder().insert().values({ teamId: team.id, userId }).orIgnore().execute();
    return this.get(principal, teamId);
  }

  async removeMember(principal: Principal, teamId: string, userId: string): Promise<void> {
    const team = await this.get(principal, teamId);
    const result = await this.members.delete({ teamId: team.id, userId });
    if (!result.affected) throw new AccountError(AccountErrorCode.NotFound, 'The team member was not found.');
  }

  private async loadMembers(teams: Team[]): Promise<void> {
    if (!teams.length) return;
    const rows = await this.members
      .createQueryBuilder('member')
      .where('member.team_id IN (:...ids)', { ids: teams.map((t) => t.id) })
      .getMany();
    for (const team of teams) team.members = rows.filter((row) => row.teamId === team.id);
  }
}
