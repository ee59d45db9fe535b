import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  OneToMany,
  PrimaryColumn,
} from 'typeorm';
import { Organization } from './organization.entity';
import { User } from './user.entity';

// A team and its members in one file: each entity names the other (the relation both ways), and two
// files would import each other.

@Entity({ name: 'teams' })
@Index('teams_organization_name_key', ['organizationId', 'name'], { unique: true })
export class Team {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'organization_id', type: 'text' })
  organizationId: string;

  @ManyToOne(() => Organization, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'organization_id' })
  organization?: Organization;

  @Column({ type: 'text' })
  name: string;

  @OneToMany(() => TeamMember, (member) => member.team)
  members?: TeamMember[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}

@Entity({ name: 'team_members' })
@Index('team_members_user_idx', ['userId'])
export class TeamMember {
  @PrimaryColumn({ name: 'team_id', type: 'text' })
  teamId: string;

  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId: string;

  @ManyToOne(() => Team, (team) => team.members, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'team_id' })
  team?: Team;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
