/**
 * Every core module's declarations (permissions and id kinds), loaded by platformModules so each process
 * knows the whole permission vocabulary whichever modules it boots: the worker runs only tasks and
 * webhooks but still reads custom roles that grant `users:read`, and a role must mean the same there.
 * An extension's declarations load with the extension list (src/extensions.ts), in both processes too.
 */
import './accounts/accounts.declarations';
import './agents/agents.declarations';
import './api-keys/api-keys.declarations';
import './audit/audit.declarations';
import './events/events.declarations';
import './files/files.declarations';
import './identities/identities.declarations';
import './organization-policies/organization-policies.declarations';
import './organization-secrets/organization-secrets.declarations';
import './roles/roles.declarations';
import './sessions/sessions.declarations';
import './tasks/tasks.declarations';
import './webhooks/webhooks.declarations';
