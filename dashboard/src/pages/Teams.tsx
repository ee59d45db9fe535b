import { useState } from 'preact/hooks';
import { api, call, everyPage, type Team, type User } from '../api/client';
import { useAction, useLoad, usePaged } from '../api/hooks';
import { SelectField, TextField } from '../components/Field';
import { Loading, Page, ProblemNote } from '../components/Page';
import { useCan } from '../permissions';

export function Teams() {
  const can = useCan();
  const teams = usePaged((cursor) => call(api.GET('/v1/teams', { params: { query: { cursor } } })), []);
  // Names for the member lists and the "add" select, when the user may list users.
  const users = useLoad(
    async () =>
      can('users:read')
        ? everyPage((cursor) => call(api.GET('/v1/users', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [],
  );

  return (
    <Page title="Teams">
      <p class="lead">Teams group users; a team key acts for its team.</p>
      {can('teams:create') && <CreateTeam onCreated={teams.reload} />}
      <div aria-busy={teams.loading}>
        {teams.items.map((team) => (
          <TeamCard key={team.id} team={team} users={users.data ?? null} onChanged={teams.reload} />
        ))}
        {!teams.loading && teams.items.length === 0 && !teams.problem && <p class="empty">No teams yet.</p>}
      </div>
      {teams.loading && <Loading />}
      <ProblemNote problem={teams.problem} />
      {teams.hasMore && !teams.loading && (
        <button type="button" class="secondary" onClick={teams.loadMore}>
          Load more
        </button>
      )}
    </Page>
  );
}

function CreateTeam({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await call(api.POST('/v1/teams', { body: { name } }));
      setName('');
      onCreated();
    });
  };
  return (
    <form class="toolbar" onSubmit={submit} aria-label="Create a team">
      <TextField label="Team name" required maxLength={100} value={name} onValue={setName} />
      <button type="submit" class="toolbar-action" disabled={action.busy} aria-busy={action.busy}>
        Create team
      </button>
      <ProblemNote problem={action.problem} />
    </form>
  );
}

function TeamCard({ team, users, onChanged }: { team: Team; users: User[] | null; onChanged: () => void }) {
  const can = useCan();
  const action = useAction();
  const [adding, setAdding] = useState('');
  const byId = new Map((users ?? []).map((user) => [user.id, user]));
  const headingId = `team-${team.id}`;
  const candidates = (users ?? []).filter((user) => user.active && !team.member_ids.includes(user.id));

  const add = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await call(
        api.POST('/v1/teams/{id}/members', { params: { path: { id: team.id } }, body: { user_id: adding } }),
      );
      setAdding('');
      onChanged();
    });
  };
  const remove = (userId: string) =>
    action.run(async () => {
      await call(
        api.DELETE('/v1/teams/{id}/members/{userId}', { params: { path: { id: team.id, userId } } }),
      );
      onChanged();
    });

  return (
    <section class="card" aria-labelledby={headingId}>
      <h2 id={headingId}>{team.name}</h2>
      <h3>Members</h3>
      {team.member_ids.length === 0 ? (
        <p class="empty">No members yet.</p>
      ) : (
        <ul class="members">
          {team.member_ids.map((memberId) => {
            const member = byId.get(memberId);
            const label = member ? `${member.name} (${member.email})` : memberId;
            return (
              <li key={memberId}>
                <span>{label}</span>
                {can('teams:update') && (
                  <button
                    type="button"
                    class="secondary small"
                    disabled={action.busy}
                    aria-label={`Remove ${member ? member.name : memberId} from ${team.name}`}
                    onClick={() => void remove(memberId)}
                  >
                    Remove
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {can('teams:update') && (
        <form class="inline-form" onSubmit={add}>
          {users ? (
            <SelectField
              label="User"
              value={adding}
              onValue={setAdding}
              required
              options={[
                { value: '', label: 'Choose a user' },
                ...candidates.map((user) => ({ value: user.id, label: `${user.name} (${user.email})` })),
              ]}
            />
          ) : (
            <TextField label="User ID" required placeholder="usr_…" value={adding} onValue={setAdding} />
          )}
          <button type="submit" disabled={action.busy || !adding}>
            Add member
          </button>
        </form>
      )}
      <ProblemNote problem={action.problem} />
    </section>
  );
}
