import { Organization } from '../accounts/organization.entity';
import { Team } from '../accounts/team.entity';
import { TeamMember } from '../accounts/team-member.entity';
import { User } from '../accounts/user.entity';
import { Agent } from '../agents/agent.entity';
import { FileRecord } from '../files/file.entity';
import { Task } from '../tasks/task.entity';
import { WebhookDelivery } from '../webhooks/webhook-delivery.entity';
import { Webhook } from '../webhooks/webhook.entity';
import { ApiKey } from '../api-keys/api-key.entity';
import { AuditEntry } from '../audit/audit-entry.entity';
import { DomainEvent } from '../events/event.entity';
import { CustomRole } from '../roles/custom-role.entity';

/** Every entity, listed explicitly so the compiled app and the migration CLI see the same schema. */
export const ENTITIES = [
  Organization,
  User,
  Team,
  TeamMember,
  CustomRole,
  ApiKey,
  AuditEntry,
  DomainEvent,
  FileRecord,
  Agent,
  Task,
  Webhook,
  WebhookDelivery,
];
