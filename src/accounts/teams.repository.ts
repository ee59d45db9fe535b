import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ListQueryDto, Page, paginate } from '../common/pagination';
import { Team, TeamMember } from './team.entity';

/** The teams and team_members tables: every query on them. */
@Injectable()
export class TeamsRepository {
  constructor(
    @InjectRepository(Team) private readonly teams: Repository<Team>,
    @InjectRepository(TeamMember) private readonly members: Repository<TeamMember>,
  ) {}

  /** Runs `work` in one transaction: a change and its audit entry commit together. */
  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.teams.manager.transaction(work);
  }

  exists(organizationId: string, id: string): Promise<boolean> {
    return this.teams.existsBy({ id, organizationId });
  }

  insert(manager: EntityManager, fields: Pick<Team, 'id' | 'organizationId' | 'name'>): Promise<Team> {
    return manager.save(Team, this.teams.create(fields));
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

  /**
   * Adds a member; adding an existing one is a no-op. Whether this call added it: of concurrent adds
   * of one member exactly one inserts, so the change is recorded once.
   */
  async addMember(manager: EntityManager, teamId: string, userId: string): Promise<boolean> {
    const inserted = await manager.query<unknown[]>(
      `INSERT INTO team_members (team_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING team_id`,
      [teamId, userId],
    );
    return inserted.length > 0;
  }

  /** Whether there was such a member to remove. */
  async removeMember(manager: EntityManager, teamId: string, userId: string): Promise<boolean> {
    const result = await manager.delete(TeamMember, { teamId, userId });
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
