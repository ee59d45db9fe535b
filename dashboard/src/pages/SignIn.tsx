import { useEffect, useState } from 'preact/hooks';
import { useAction } from '../api/hooks';
import { signIn, type ProblemDetails, type SignOutReason } from '../api/session';
import { TextField } from '../components/Field';
import { ProblemNote } from '../components/Page';

const NOTICES: Record<SignOutReason, string> = {
  signed_out: 'You are signed out.',
  idle: 'You were signed out after 30 minutes without activity.',
  expired: 'Your session has ended. Sign in again to continue.',
};

/** `problem`: why the session could not be resumed (say, the server was unreachable). */
export function SignIn({ reason, problem }: { reason?: SignOutReason; problem?: ProblemDetails }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();

  useEffect(() => {
    document.title = 'Sign in · Gatehouse';
  }, []);

  const submit = (event: Event) => {
    event.preventDefault();
    // On success the session announces the user and the app replaces this form.
    void action.run(() => signIn(email.trim(), password));
  };

  return (
    <main id="main" class="sign-in" tabIndex={-1}>
      <h1>Sign in to Gatehouse</h1>
      {reason && !action.problem && (
        <p class="note" role="status">
          {NOTICES[reason]}
        </p>
      )}
      <form onSubmit={submit} aria-busy={action.busy}>
        <TextField
          label="Email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onValue={setEmail}
        />
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onValue={setPassword}
        />
        <ProblemNote problem={action.problem ?? problem ?? null} />
        <button type="submit" disabled={action.busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
