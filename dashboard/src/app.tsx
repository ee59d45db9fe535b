import type { ComponentChildren, VNode } from 'preact';
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
import { Loading, NoAccess, Page } from './components/Page';
import { ApiKeyDetail } from './pages/ApiKeyDetail';
import { ApiKeys } from './pages/ApiKeys';
import { AuditLog } from './pages/AuditLog';
import { Identities } from './pages/Identities';
import { IdentityDetail } from './pages/IdentityDetail';
import { NotFound, Settings, UsersAndTeams } from './pages/Overview';
import { Roles } from './pages/Roles';
import { SignIn } from './pages/SignIn';
import { Teams } from './pages/Teams';
import { Usage } from './pages/Usage';
import { Users } from './pages/Users';
import { WebhookDeliveries } from './pages/WebhookDeliveries';
import { Webhooks } from './pages/Webhooks';
import { useCan, UserContext } from './permissions';
import { Link, navigate, usePath } from './router';

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

  useEffect(() => {
    if (path === '/') navigate('/api-keys', { replace: true });
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
        <span class="brand">Gatehouse</span>
        <span class="who">
          <span class="who-name">{user.name}</span> <span class="who-email">{user.email}</span>
        </span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <Navigation path={path} />
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
          <NoAccess what={route.read.what} />
        </Page>
      );
    }
    // Keyed by path: moving from one key to another starts the page afresh.
    return <div key={path}>{route.render(match.slice(1).map(decodeURIComponent))}</div>;
  }
  return <NotFound />;
}

function NavLink({
  href,
  path,
  exact = false,
  children,
}: {
  href: string;
  path: string;
  /** Current only on this very page, not on the pages below it. */
  exact?: boolean;
  children: ComponentChildren;
}) {
  const current = path === href || (!exact && path.startsWith(`${href}/`));
  return (
    <Link href={href} aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

/** As the spec describes it: Settings, under it Users and Teams, under that API Keys; then the rest. */
function Navigation({ path }: { path: string }) {
  const can = useCan();
  return (
    <nav aria-label="Main">
      <ul>
        <li>
          <NavLink href="/settings" path={path} exact>
            Settings
          </NavLink>
          <ul>
            <li>
              <NavLink href="/settings/users-and-teams" path={path}>
                Users and Teams
              </NavLink>
              <ul>
                <li>
                  <NavLink href="/api-keys" path={path}>
                    API Keys
                  </NavLink>
                </li>
              </ul>
            </li>
          </ul>
        </li>
        {can('identities:read') && (
          <li>
            <NavLink href="/identities" path={path}>
              Identities
            </NavLink>
          </li>
        )}
        {can('api_keys:read') && (
          <li>
            <NavLink href="/usage" path={path}>
              Usage
            </NavLink>
          </li>
        )}
        <li>
          <NavLink href="/users" path={path}>
            Users
          </NavLink>
        </li>
        <li>
          <NavLink href="/teams" path={path}>
            Teams
          </NavLink>
        </li>
        <li>
          <NavLink href="/roles" path={path}>
            Roles
          </NavLink>
        </li>
        <li>
          <NavLink href="/webhooks" path={path}>
            Webhooks
          </NavLink>
        </li>
        <li>
          <NavLink href="/audit-log" path={path}>
            Audit log
          </NavLink>
        </li>
      </ul>
    </nav>
  );
}
