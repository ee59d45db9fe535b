import type { VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  NETWORK_PROBLEM,
  onSessionChange,
  refreshSession,
  signOut,
  type ProblemDetails,
  type SessionUser,
  type SignOutReason,
} from './api/session';
import { firstPage, Navigation, NAVIGATION, visibleEntries } from './components/Navigation';
import { Loading, NoAccess, Page } from './components/Page';
import { Agents } from './pages/Agents';
import { ApiKeyDetail } from './pages/ApiKeyDetail';
import { ApiKeys } from './pages/ApiKeys';
import { AuditLog } from './pages/AuditLog';
import { ConnectedApps } from './pages/ConnectedApps';
import { Identities } from './pages/Identities';
import { IdentityDetail } from './pages/IdentityDetail';
import { NotFound, Settings, UsersAndTeams } from './pages/Overview';
import { Roles } from './pages/Roles';
import { Secrets } from './pages/Secrets';
import { SignIn } from './pages/SignIn';
import { TaskDetail } from './pages/TaskDetail';
import { Tasks } from './pages/Tasks';
import { Teams } from './pages/Teams';
import { Usage } from './pages/Usage';
import { Users } from './pages/Users';
import { WebhookDeliveries } from './pages/WebhookDeliveries';
import { Webhooks } from './pages/Webhooks';
import { UserContext } from './permissions';
import { navigate, usePath } from './router';

/** Signed out after this long without a key press, click, touch or scroll. */
const IDLE_LIMIT_MS = 30 * 60 * 1000;

interface Route {
  path: RegExp;
  title: string;
  /** Without this permission the page says so instead of calling the API. */
  read?: { permission: string; what: string };
  render: (params: string[]) => VNode;
}

const ROUTES: Route[] = [
  { path: /^\/settings$/, title: 'Settings', render: () => <Settings /> },
  { path: /^\/settings\/users-and-teams$/, title: 'Users and Teams', render: () => <UsersAndTeams /> },
  {
    path: /^\/api-keys$/,
    title: 'API Keys',
    read: { permission: 'api_keys:read', what: 'API keys' },
    render: () => <ApiKeys />,
  },
  {
    path: /^\/api-keys\/([^/]+)$/,
    title: 'API key',
    read: { permission: 'api_keys:read', what: 'API keys' },
    render: ([id]) => <ApiKeyDetail id={id} />,
  },
  {
    path: /^\/identities$/,
    title: 'Identities',
    read: { permission: 'identities:read', what: 'identities' },
    render: () => <Identities />,
  },
  {
    path: /^\/identities\/([^/]+)$/,
    title: 'Identity',
    read: { permission: 'identities:read', what: 'identities' },
    render: ([id]) => <IdentityDetail id={id} />,
  },
  {
    path: /^\/usage$/,
    title: 'Usage',
    read: { permission: 'api_keys:read', what: 'usage' },
    render: () => <Usage />,
  },
  {
    path: /^\/users$/,
    title: 'Users',
    read: { permission: 'users:read', what: 'users' },
    render: () => <Users />,
  },
  {
    path: /^\/teams$/,
    title: 'Teams',
    read: { permission: 'teams:read', what: 'teams' },
    render: () => <Teams />,
  },
  {
    path: /^\/roles$/,
    title: 'Roles',
    read: { permission: 'roles:read', what: 'roles' },
    render: () => <Roles />,
  },
  {
    path: /^\/webhooks$/,
    title: 'Webhooks',
    read: { permission: 'webhooks:read', what: 'webhooks' },
    render: () => <Webhooks />,
  },
  {
    path: /^\/webhooks\/([^/]+)$/,
    title: 'Webhook deliveries',
    read: { permission: 'webhooks:read', what: 'webhooks' },
    render: ([id]) => <WebhookDeliveries id={id} />,
  },
  {
    path: /^\/audit-log$/,
    title: 'Audit log',
    read: { permission: 'audit:read', what: 'the audit log' },
    render: () => <AuditLog />,
  },
  {
    path: /^\/tasks$/,
    title: 'Tasks',
    read: { permission: 'tasks:read', what: 'tasks' },
    render: () => <Tasks />,
  },
  {
    path: /^\/tasks\/([^/]+)$/,
    title: 'Task',
    read: { permission: 'tasks:read', what: 'tasks' },
    render: ([id]) => <TaskDetail id={id} />,
  },
  {
    path: /^\/agents$/,
    title: 'Agents',
    read: { permission: 'agents:read', what: 'agents' },
    render: () => <Agents />,
  },
  {
    path: /^\/secrets$/,
    title: 'Secrets',
    read: { permission: 'secrets:read', what: 'secrets' },
    render: () => <Secrets />,
  },
  // Everyone has grants of their own to see and revoke; the API answers the organization's to api_keys:read.
  { path: /^\/connected-apps$/, title: 'Connected apps', render: () => <ConnectedApps /> },
];

type Auth =
  | { status: 'starting' }
  | { status: 'signed-out'; reason?: SignOutReason; problem?: ProblemDetails }
  | { status: 'signed-in'; user: SessionUser };

export function App() {
  const [auth, setAuth] = useState<Auth>({ status: 'starting' });

  useEffect(() => {
    const stop = onSessionChange((user, reason) =>
      setAuth(user ? { status: 'signed-in', user } : { status: 'signed-out', reason }),
    );
    // A session from before a reload lives on in the httpOnly cookie: trade it for an access token.
    refreshSession().then(
      (user) => {
        if (!user) setAuth({ status: 'signed-out' });
      },
      () => setAuth({ status: 'signed-out', problem: NETWORK_PROBLEM }),
    );
    return stop;
  }, []);

  useIdleSignOut(auth.status === 'signed-in');

  if (auth.status === 'starting') {
    return (
      <main id="main" class="sign-in" aria-busy="true" tabIndex={-1}>
        <Loading />
      </main>
    );
  }
  if (auth.status === 'signed-out') {
    return <SignIn reason={auth.reason} problem={auth.problem} />;
  }
  return (
    <UserContext.Provider value={auth.user}>
      <Shell user={auth.user} />
    </UserContext.Provider>
  );
}

function useIdleSignOut(active: boolean): void {
  useEffect(() => {
    if (!active) return;
    let lastActivity = Date.now();
    const touch = () => {
      lastActivity = Date.now();
    };
    const events = ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart', 'scroll'];
    for (const name of events) window.addEventListener(name, touch, { passive: true, capture: true });
    // Compared against the clock rather than one long timer, so a sleeping laptop is judged correctly.
    const check = setInterval(() => {
      if (Date.now() - lastActivity >= IDLE_LIMIT_MS) void signOut('idle');
    }, 15_000);
    return () => {
      clearInterval(check);
      for (const name of events) window.removeEventListener(name, touch, { capture: true });
    };
  }, [active]);
}

function Shell({ user }: { user: SessionUser }) {
  const path = usePath();
  const main = useRef<HTMLElement>(null);
  const firstRender = useRef(true);
  // The navigation on a narrow screen, folded away behind the Menu button until asked for.
  const [menuOpen, setMenuOpen] = useState(false);
  const held: readonly string[] = user.permissions;

  useEffect(() => {
    // The first page this user can use (API Keys for most; Tasks for a developer).
    if (path === '/') {
      navigate(firstPage(visibleEntries(NAVIGATION, (p) => held.includes(p))) ?? '/settings', {
        replace: true,
      });
    }
    setMenuOpen(false);
    // After a navigation, start reading (and tabbing) at the new page, as a full page load would.
    if (firstRender.current) firstRender.current = false;
    else main.current?.focus();
  }, [path]);

  return (
    <div class="shell">
      <a
        class="skip-link"
        href="#main"
        onClick={(event) => {
          event.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="secondary menu-button"
          aria-expanded={menuOpen}
          aria-controls="main-navigation"
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </button>
        <span class="brand">Gatehouse</span>
        <span class="who">
          <span class="who-name">{user.name}</span> <span class="who-email">{user.email}</span>
        </span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <Navigation path={path} open={menuOpen} />
      <main id="main" ref={main} tabIndex={-1}>
        <CurrentPage path={path} user={user} />
      </main>
    </div>
  );
}

function CurrentPage({ path, user }: { path: string; user: SessionUser }) {
  if (path === '/') return <Loading />;
  for (const route of ROUTES) {
    const match = route.path.exec(path);
    if (!match) continue;
    if (route.read && !(user.permissions as readonly string[]).includes(route.read.permission)) {
      return (
        <Page title={route.title}>
          <NoAccess what={route.read.what} permission={route.read.permission} />
        </Page>
      );
    }
    // Keyed by path: moving from one key to another starts the page afresh.
    return <div key={path}>{route.render(match.slice(1).map(decodeURIComponent))}</div>;
  }
  return <NotFound />;
}
