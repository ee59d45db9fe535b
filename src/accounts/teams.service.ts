import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '../access/principal';
import { actorOf, AuditService, RequestOrigin } from '../audit/audit.service';
import type { AccountAuditAction } from './accounts.declarations';
import { isIdOf, newId } from '../common/ids';
import { TEAM_ID } from './accounts.declarations';
import { ListQueryDto, Page } from '../common/pagination';
import { isUniqueViolation } from '../database/database-errors';
import { CreateTeamDto } from './dto/team.dto';
import { Team } from './team.entity';
import { TeamsRepository } from './teams.repository';
import { UsersRepository } from './users.repository';
import { AccountError, AccountErrorCode } from './accounts.errors';

@Injectable()
export class TeamsService {
  constructor(
    private readonly teams: TeamsRepository,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
  ) {}

  /** Whether the team exists in the organization (team keys name one). */
  exists(organizationId: string, teamId: string): Promise<boolean> {
    return isIdOf(TEAM_ID, teamId) ? this.teams.exists(organizationId, teamId) : Promise.resolve(false);
  }

  async create(principal: Principal, dto: CreateTeamDto, origin: RequestOrigin): Promise<Team> {
    try {
      const team = await this.teams.transaction(async (manager) => {
        const row = await this.teams.insert(manager, {
          id: newId(TEAM_ID),
          organizationId: principal.organizationId,
          name: dto.name,
        });
        await this.record(manager, principal, origin, row, 'team.created');
        return row;
      });
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
    const page = await this.teams.page(principal.organizationId, query);
    await this.loadMembers(page.data);
    return page;
  }

  async get(principal: Principal, id: string): Promise<Team> {
    const team = isIdOf(TEAM_ID, id) ? await this.teams.findWithMembers(principal.organizationId, id) : null;
    if (!team) throw new AccountError(AccountErrorCode.NotFound, 'The team was not found.');
    return team;
  }

  async addMember(
    principal: Principal,
    teamId: string,
    userId: string,
    origin: RequestOrigin,
  ): Promise<Team> {
    const team = await this.get(principal, teamId);
    const user = await this.users.findInOrganization(principal.organizationId, userId);
    if (!user) throw new AccountError(AccountErrorCode.NotFound, 'The user was not found.');
    // Adding an existing member is a no-op (and records nothing), so a retried request is safe.
    await this.teams.transaction(async (manager) => {
      if (await this.teams.addMember(manager, team.id, userId))
        await this.record(manager, principal, origin, team, 'team.member_added', { user_id: userId });
    });
    return this.get(principal, teamId);
  }

  async removeMember(
    principal: Principal,
    teamId: string,
    userId: string,
    origin: RequestOrigin,
  ): Promise<void> {
    const team = await this.get(principal, teamId);
    await this.teams.transaction(async (manager) => {
      if (!(await this.teams.removeMember(manager, team.id, userId)))
        throw new AccountError(AccountErrorCode.NotFound, 'The team member was not found.');
      await this.record(manager, principal, origin, team, 'team.member_removed', { user_id: userId });
    });
  }

  /** The audit entry of a change to `team`, in the change's transaction. */
  private record(
    manager: EntityManager,
    principal: Principal,
    origin: RequestOrigin,
    team: Team,
    action: AccountAuditAction,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    return this.audit.append(manager, [
      {
        organizationId: team.organizationId,
        action,
        actor: actorOf(principal),
        origin,
        details: { team_id: team.id, name: team.name, ...details },
      },
    ]);
  }

  private async loadMembers(teams: Team[]): Promise<void> {
    if (!teams.length) return;
    const rows = await this.teams.membersOf(teams.map((t) => t.id));
    for (const team of teams) team.members = rows.filter((row) => row.teamId === team.id);
  }
}
