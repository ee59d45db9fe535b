import { Accounts1795290908908 } from './1795290908908-Accounts';
import { ApiKeysRolesAudit1795291284857 } from './1795291284857-ApiKeysRolesAudit';
import { KeyPoliciesOutbox1795292400954 } from './1795292400954-KeyPoliciesOutbox';
import { AgentsTasksFiles1795293424707 } from './1795293424707-AgentsTasksFiles';
import { Webhooks1795293629344 } from './1795293629344-Webhooks';
import { TaskQueuedNotify1795400000000 } from './1795400000000-TaskQueuedNotify';
import { KeyControlsCreditsUsage1795500000000 } from './1795500000000-KeyControlsCreditsUsage';
import { DashboardSessions1795600000000 } from './1795600000000-DashboardSessions';
import { UsageBatches1795710000000 } from './1795710000000-UsageBatches';
import { DashboardSessionRotation1795720000000 } from './1795720000000-DashboardSessionRotation';
import { CreditLeases1795730000000 } from './1795730000000-CreditLeases';
import { TaskEvents1795740000000 } from './1795740000000-TaskEvents';
import { AgentRuns1795750000000 } from './1795750000000-AgentRuns';
import { Identities1795760000000 } from './1795760000000-Identities';
import { IdentityCredits1795770000000 } from './1795770000000-IdentityCredits';
import { IdentityUsage1795900000000 } from './1795900000000-IdentityUsage';
import { LeakedKeysPolicies1795910000000 } from './1795910000000-LeakedKeysPolicies';
import { AuditActorIndex1795920000000 } from './1795920000000-AuditActorIndex';
import { PendingLeakReports1795941000000 } from './1795941000000-PendingLeakReports';
import { AuditChainKey1795960000000 } from './1795960000000-AuditChainKey';
import { OAuthServer1796000000000 } from './1796000000000-OAuthServer';
import { AuditActorClient1796100000000 } from './1796100000000-AuditActorClient';
import { OrganizationSecrets1796210000000 } from './1796210000000-OrganizationSecrets';
import { TaskEventNotifyKind1796220000000 } from './1796220000000-TaskEventNotifyKind';
import { A2aContexts1796230000000 } from './1796230000000-A2aContexts';
import { A2aPushConfigs1796240000000 } from './1796240000000-A2aPushConfigs';
import { TaskEndNotify1796250000000 } from './1796250000000-TaskEndNotify';
import { TaskTraceParent1796260000000 } from './1796260000000-TaskTraceParent';

/** Every migration in order; generated with `npm run migration:generate` and never edited after release. */
export const MIGRATIONS = [
  Accounts1795290908908,
  ApiKeysRolesAudit1795291284857,
  KeyPoliciesOutbox1795292400954,
  AgentsTasksFiles1795293424707,
  Webhooks1795293629344,
  TaskQueuedNotify1795400000000,
  KeyControlsCreditsUsage1795500000000,
  DashboardSessions1795600000000,
  UsageBatches1795710000000,
  DashboardSessionRotation1795720000000,
  CreditLeases1795730000000,
  TaskEvents1795740000000,
  AgentRuns1795750000000,
  Identities1795760000000,
  IdentityCredits1795770000000,
  IdentityUsage1795900000000,
  LeakedKeysPolicies1795910000000,
  AuditActorIndex1795920000000,
  PendingLeakReports1795941000000,
  AuditChainKey1795960000000,
  OAuthServer1796000000000,
  AuditActorClient1796100000000,
  OrganizationSecrets1796210000000,
  TaskEventNotifyKind1796220000000,
  A2aContexts1796230000000,
  A2aPushConfigs1796240000000,
  TaskEndNotify1796250000000,
  TaskTraceParent1796260000000,
];
