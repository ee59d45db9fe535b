import { useState } from 'preact/hooks';
import { api, call, type User } from '../api/client';
import { useAction, usePaged, useRoleNames } from '../api/hooks';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog, DialogButtons, useDialogs } from '../components/Dialog';
import { SelectField, TextField, options } from '../components/Field';
import { Page, ProblemNote } from '../components/Page';
import { Table } from '../components/Table';
import { CreateToolbar } from '../components/Toolbar';
import { useCan, useUser } from '../permissions';

export function Users() {
  const can = useCan();
  const roleNames = useRoleNames();
  const users = usePaged((cursor) => call(api.GET('/v1/users', { params: { query: { cursor } } })), []);
  const { dialog, open, close, done } = useDialogs<{ kind: 'create' } | { kind: 'deactivate'; user: User }>(
    users.reload,
  );

  return (
    <Page title="Users">
      <p class="lead">The people of your organization. Deactivating a user revokes their personal keys.</p>
      <CreateToolbar permission="users:create" label="Create user" onClick={() => open({ kind: 'create' })} />
      <Table
        caption="Users"
        rows={users.items}
        rowKey={(user) => user.id}
        paged={users}
        columns={[
          { header: 'Name', rowHeader: true, cell: (user) => user.name },
          { header: 'Email', fold: true, cell: (user) => user.email },
          {
            header: 'Role',
            fold: true,
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
                  onDeactivate={() => open({ kind: 'deactivate', user })}
                  onChanged={users.reload}
                />
              ) : null,
          },
        ]}
      />
      {dialog?.kind === 'create' && (
        <CreateUserDialog roleNames={roleNames} onClose={close} onCreated={done} />
      )}
      {dialog?.kind === 'deactivate' && (
        <ConfirmDialog
          title={`Deactivate ${dialog.user.name}?`}
          confirmLabel="Deactivate"
          confirm={() =>
            call(api.POST('/v1/users/{id}/deactivate', { params: { path: { id: dialog.user.id } } }))
          }
          onDone={done}
          onClose={close}
        >
          <p>
            {dialog.user.email} can no longer sign in, their access tokens stop working at once and every
            personal key they own is revoked. Activating them again later does not restore revoked keys.
          </p>
        </ConfirmDialog>
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
        <DialogButtons submitLabel="Create" busy={action.busy} onCancel={onClose} />
      </form>
    </Dialog>
  );
}
