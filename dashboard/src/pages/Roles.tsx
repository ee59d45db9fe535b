import { useState } from 'preact/hooks';
import { api, call, type Action, type Role } from '../api/client';
import { useAction, useLoad, usePaged } from '../api/hooks';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog, DialogButtons, useDialogs } from '../components/Dialog';
import { TextField } from '../components/Field';
import { Page, ProblemNote } from '../components/Page';
import { Table } from '../components/Table';
import { CreateToolbar } from '../components/Toolbar';
import { useCan } from '../permissions';

type Permissions = Role['permissions'];

const summary = (permissions: Permissions) =>
  Object.entries(permissions)
    .filter(([, actions]) => actions.length)
    .map(([resource, actions]) => `${resource}: ${actions.join(', ')}`)
    .join('; ') || 'None';

export function Roles() {
  const can = useCan();
  const roles = usePaged((cursor) => call(api.GET('/v1/roles', { params: { query: { cursor } } })), []);
  const { dialog, open, close, done } = useDialogs<
    { kind: 'create' } | { kind: 'edit' | 'delete'; role: Role }
  >(roles.reload);

  return (
    <Page title="Roles">
      <p class="lead">
        A role grants permissions to the users and keys that hold it. Built-in roles are fixed; custom roles
        are a matrix of resources and actions.
      </p>
      <CreateToolbar permission="roles:create" label="Create role" onClick={() => open({ kind: 'create' })} />
      <Table
        caption="Roles"
        rows={roles.items}
        rowKey={(role) => role.role_name}
        paged={roles}
        columns={[
          { header: 'Role', rowHeader: true, cell: (role) => <code>{role.role_name}</code> },
          { header: 'Kind', fold: true, cell: (role) => (role.built_in ? 'Built-in' : 'Custom') },
          {
            header: 'Permissions',
            fold: true,
            cell: (role) => <span class="details">{summary(role.permissions)}</span>,
          },
          {
            header: 'Actions',
            cell: (role) =>
              role.built_in ? null : (
                <div class="actions">
                  {can('roles:update') && (
                    <button type="button" class="secondary" onClick={() => open({ kind: 'edit', role })}>
                      Edit
                    </button>
                  )}
                  {can('roles:delete') && (
                    <button type="button" class="danger" onClick={() => open({ kind: 'delete', role })}>
                      Delete
                    </button>
                  )}
                </div>
              ),
          },
        ]}
      />
      {dialog?.kind === 'create' && <RoleDialog onClose={close} onSaved={done} />}
      {dialog?.kind === 'edit' && <RoleDialog role={dialog.role} onClose={close} onSaved={done} />}
      {dialog?.kind === 'delete' && (
        <ConfirmDialog
          title={`Delete role ${dialog.role.role_name}?`}
          confirmLabel="Delete"
          confirm={() =>
            call(
              api.DELETE('/v1/roles/{roleName}', { params: { path: { roleName: dialog.role.role_name } } }),
            )
          }
          onDone={done}
          onClose={close}
        >
          <p>A role still held by a user or key cannot be deleted.</p>
        </ConfirmDialog>
      )}
    </Page>
  );
}

/** Create (no `role`) or edit a custom role's permission matrix. */
function RoleDialog({ role, onClose, onSaved }: { role?: Role; onClose: () => void; onSaved: () => void }) {
  const [name, setName] = useState(role?.role_name ?? '');
  const [permissions, setPermissions] = useState<Permissions>(role?.permissions ?? {});
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    // Only resources with at least one action are sent.
    const granted = Object.fromEntries(Object.entries(permissions).filter(([, actions]) => actions.length));
    void action.run(async () => {
      if (role) {
        await call(
          api.PATCH('/v1/roles/{roleName}', {
            params: { path: { roleName: role.role_name } },
            body: { permissions: granted },
          }),
        );
      } else {
        await call(api.POST('/v1/roles', { body: { role_name: name, permissions: granted } }));
      }
      onSaved();
    });
  };

  return (
    <Dialog title={role ? `Edit role ${role.role_name}` : 'Create a role'} onClose={onClose} wide>
      <form onSubmit={submit}>
        {!role && (
          <TextField
            label="Role name"
            required
            pattern="[a-z][a-z0-9_]{1,49}"
            value={name}
            onValue={setName}
            hint="2–50 lowercase letters, digits or underscores, starting with a letter."
          />
        )}
        <PermissionMatrix permissions={permissions} onChange={setPermissions} />
        <ProblemNote problem={action.problem} />
        <DialogButtons submitLabel={role ? 'Save' : 'Create'} busy={action.busy} onCancel={onClose} />
      </form>
    </Dialog>
  );
}

/**
 * Resources × actions as checkboxes, each named `resource:action`. A permission the signed-in user lacks
 * cannot be granted (no escalation), so it is not offered unless the role already holds it.
 */
function PermissionMatrix({
  permissions,
  onChange,
}: {
  permissions: Permissions;
  onChange: (permissions: Permissions) => void;
}) {
  const can = useCan();
  // The resources and actions this server's modules declare, so a module's new resource shows up here.
  const catalogue = useLoad(async () => (await call(api.GET('/v1/permissions'))).data, []);
  if (!catalogue.data) return <ProblemNote problem={catalogue.problem} />;
  const resources = catalogue.data;
  // The union of the resources' actions, in the order the catalogue first names them.
  const actions = [...new Set(resources.flatMap((r) => r.actions))];
  const toggle = (resource: string, actionsOfResource: Action[], action: Action, on: boolean) => {
    const current = permissions[resource] ?? [];
    const next = on
      ? actionsOfResource.filter((a) => a === action || current.includes(a))
      : current.filter((a) => a !== action);
    onChange({ ...permissions, [resource]: next });
  };
  return (
    <div class="table-wrap" role="region" aria-label="Permissions" tabIndex={0}>
      <table class="matrix">
        <caption>Permissions</caption>
        <thead>
          <tr>
            <th scope="col">Resource</th>
            {actions.map((action) => (
              <th key={action} scope="col">
                {action}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {resources.map(({ resource, actions: own }) => (
            <tr key={resource}>
              <th scope="row">{resource}</th>
              {actions.map((action) => {
                // A resource without this action has no box: there is nothing to grant.
                if (!own.includes(action)) return <td key={action} />;
                const checked = (permissions[resource] ?? []).includes(action);
                return (
                  <td key={action}>
                    <input
                      type="checkbox"
                      aria-label={`${resource}:${action}`}
                      checked={checked}
                      disabled={!checked && !can(`${resource}:${action}`)}
                      onChange={(event) => toggle(resource, own, action, event.currentTarget.checked)}
                    />
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
