import { useState } from 'preact/hooks';
import { api, call, type User } from '../api/client';
import { useAction, usePaged, useRoleNames } from '../api/hooks';
import { Dialog } from '../components/Dialog';
import { SelectField, TextField, options } from '../components/Field';
import { Page, ProblemNote } from '../components/Page';
import { Table } from '../components/Table';
import { useCan, useUser } from '../permissions';
import { ConfirmDialog } from '../components/ConfirmDialog';

export function Users() {
  const can = useCan();
  const roleNames = useRoleNames();
  const [creating, setCreating] = useState(false);
  const [deactivating, setDeactivating] = useState<User | null>(null);
  const users = usePaged((cursor) => call(api.GET('/v1/users', { params: { query: { cursor } } })), []);

  return (
    <Page title="Users">
      <p class="lead">The people of your organization. Deactivating a user revokes their personal keys.</p>
      {can('users:create') && (
        <div class="toolbar">
          <button type="button" class="toolbar-action" onClick={() => setCreating(true)}>
            Create user
          </button>
        </div>
      )}
      <Table
        caption="Users"
        rows={users.items}
        rowKey={(user) => user.id}
        paged={users}
        columns={[
          { header: 'Name', rowHeader: true, cell: (user) => user.name },
          { header: 'Email', cell: (user) => user.email },
          {
            header: 'Role',
            cell: (user) =>
              can('users:update') ? (
                <RoleChanger user={user} roleNames={roleNames} onChanged={users.reload} />
              ) : (
                user.role
              ),
          },
          {
            header: 'Status',
            cell: (user) => (
              <span class={`badge ${user.active ? 'active' : 'revoked'}`}>
                {user.active ? 'active' : 'deactivated'}
              </span>
            ),
          },
          {
            header: 'Actions',
            cell: (user) =>
              can('users:update') ? (
                <ActiveToggle
                  user={user}
                  onDeactivate={() => setDeactivating(user)}
                  onChanged={users.reload}
                />
              ) : null,
          },
        ]}
      />
      {creating && (
        <CreateUserDialog
          roleNames={roleNames}
          onClose={() => setCreating(false)}
          onCreated={() => {
            setCreating(false);
            users.reload();
          }}
        />
      )}
      {deactivating && (
        <DeactivateDialog
          user={deactivating}
          onClose={() => setDeactivating(null)}
          onDone={() => {
            setDeactivating(null);
            users.reload();
          }}
        />
      )}
    </Page>
  );
}

function RoleChanger({
  user,
  roleNames,
  onChanged,
}: {
  user: User;
  roleNames: string[];
  onChanged: () => void;
}) {
  const [role, setRole] = useState(user.role);
  const action = useAction();
  const names = roleNames.includes(user.role) ? roleNames : [user.role, ...roleNames];
  const save = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await call(api.PATCH('/v1/users/{id}', { params: { path: { id: user.id } }, body: { role } }));
      onChanged();
    });
  };
  return (
    <form class="inline-form" onSubmit={save}>
      <SelectField
        hideLabel
        label={`Role of ${user.email}`}
        value={role}
        onValue={setRole}
        options={options(names)}
      />
      <button type="submit" class="secondary" disabled={action.busy || role === user.role}>
        Change role
      </button>
      <ProblemNote problem={action.problem} />
    </form>
  );
}

function ActiveToggle({
  user,
  onDeactivate,
  onChanged,
}: {
  user: User;
  onDeactivate: () => void;
  onChanged: () => void;
}) {
  const me = useUser();
  const action = useAction();
  if (user.active) {
    // Deactivating oneself would end this session mid-task; another administrator can do it.
    return user.id === me.id ? null : (
      <button type="button" class="danger" onClick={onDeactivate}>
        Deactivate
      </button>
    );
  }
  const activate = () =>
    action.run(async () => {
      await call(api.POST('/v1/users/{id}/activate', { params: { path: { id: user.id } } }));
      onChanged();
    });
  return (
    <>
      <button type="button" class="secondary" disabled={action.busy} onClick={() => void activate()}>
        Activate
      </button>
      <ProblemNote problem={action.problem} />
    </>
  );
}

function DeactivateDialog({
  user,
  onClose,
  onDone,
}: {
  user: User;
  onClose: () => void;
  onDone: () => void;
}) {
  return (
    <ConfirmDialog
      title={`Deactivate ${user.name}?`}
      confirmLabel="Deactivate"
      confirm={() => call(api.POST('/v1/users/{id}/deactivate', { params: { path: { id: user.id } } }))}
      onDone={onDone}
      onClose={onClose}
    >
      <p>
        {user.email} can no longer sign in, their access tokens stop working at once and every personal key
        they own is revoked. Activating them again later does not restore revoked keys.
      </p>
    </ConfirmDialog>
  );
}

function CreateUserDialog({
  roleNames,
  onClose,
  onCreated,
}: {
  roleNames: string[];
  onClose: () => void;
  onCreated: () => void;
}) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState('');
  const action = useAction();
  const chosenRole = role || (roleNames.includes('developer') ? 'developer' : roleNames[0]) || '';

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await call(api.POST('/v1/users', { body: { email, password, name, role: chosenRole } }));
      onCreated();
    });
  };

  return (
    <Dialog title="Create a user" onClose={onClose}>
      <form onSubmit={submit}>
        <TextField label="Email" type="email" required autoComplete="off" value={email} onValue={setEmail} />
        <TextField
          label="Password"
          type="password"
          required
          minLength={8}
          autoComplete="new-password"
          value={password}
          onValue={setPassword}
          hint="At least 8 characters."
        />
        <TextField label="Name" required maxLength={100} value={name} onValue={setName} />
        <SelectField label="Role" value={chosenRole} onValue={setRole} options={options(roleNames)} />
        <ProblemNote problem={action.problem} />
        <div class="buttons">
          <button type="button" class="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy} aria-busy={action.busy}>
            Create
          </button>
        </div>
      </form>
    </Dialog>
  );
}
