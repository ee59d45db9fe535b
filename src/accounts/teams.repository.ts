import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { TeamMember } from './team-member.entity';
import { Team } from './team.entity';

/** The teams and team_members tables: every query on them. */
@Injectable()
export class TeamsRepository {
  constructor(
    @InjectRepository(Team) private readonly teams: Repository<Team>,
    @InjectRepository(TeamMember) private readonly members: Repository<TeamMember>,
  ) {}

  exists(organizationId: string, id: string): Promise<boolean> {
    return this.teams.existsBy({ id, organizationId });
  }

  insert(fields: Pick<Team, 'id' | 'organizationId' | 'name'>): Promise<Team> {
    return this.teams.save(this.teams.create(fields));
  }

  page(organizationId: string, query: ListQueryDto): Promise<Page<Team>> {
    return paginate(
      this.teams
        .createQueryBuilder('team')
        .where('team.organization_id = :organizationId', { organizationId }),
      query,
    );
  }

  /** A team of the organization with its members. */
  findWithMembers(organizationId: string, id: string): Promise<Team | null> {
    return this.teams.findOne({ where: { id, organizationId }, relations: { members: true } });
  }

  /** Adds a member; adding an existing one is a no-op. */
  async addMember(teamId: string, userId: string): Promise<void> {
    await this.members.createQueryBuilder().insert().values({ teamId, userId }).orIgnore().execute();
  }

  /** Whether there was such a member to remove. */
  async removeMember(teamId: string, userId: string): Promise<boolean> {
    const result = await this.members.delete({ teamId, userId });
    return Boolean(result.affected);
  }

  /** The members of all of `teamIds`, in one query. */
  membersOf(teamIds: string[]): Promise<TeamMember[]> {
    return this.members
      .createQueryBuilder('member')
      .where('member.team_id IN (:...ids)', { ids: teamIds })
      .getMany();
  }
}
