import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useCan, useUser } from '../permissions';
import { api, call, everyPage, type Page, type Role } from './client';
import { ApiError, type ProblemDetails } from './session';

function problemFrom(error: unknown): ProblemDetails {
  if (error instanceof ApiError) return error.problem;
  return { title: 'Error', detail: error instanceof Error ? error.message : String(error) };
}

export interface Loaded<T> {
  data: T | undefined;
  problem: ProblemDetails | null;
  loading: boolean;
  reload: () => void;
}

/**
 * A request's loading flag and problem, where only the latest request counts: an answer that arrives
 * after a newer request started is dropped.
 */
function useLatestRequest() {
  const [problem, setProblem] = useState<ProblemDetails | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const start = <T>(request: () => Promise<T>, settle: (value: T) => void) => {
    const mine = ++generation.current;
    setLoading(true);
    request().then(
      (value) => {
        if (mine !== generation.current) return;
        settle(value);
        setProblem(null);
        setLoading(false);
      },
      (error: unknown) => {
        if (mine !== generation.current) return;
        setProblem(problemFrom(error));
        setLoading(false);
      },
    );
  };
  return { problem, loading, start };
}

/** Loads once per change of `deps`; an answer that arrives after a newer request started is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const { problem, loading, start } = useLatestRequest();
  // The caller names what the loader depends on, as with useEffect.
  const reload = useCallback(() => start(load, setData), deps);
  useEffect(reload, [reload]);
  return { data, problem, loading, reload };
}

export interface Paged<T> {
  items: T[];
  problem: ProblemDetails | null;
  loading: boolean;
  hasMore: boolean;
  loadMore: () => void;
  reload: () => void;
  /**
   * Asks for the first page again without showing a load (a poll). With one page shown it becomes the
   * new first page; with more ("Load more"), the rows shown are replaced by their new versions, rows new
   * since are added on top, and the pages loaded stay.
   */
  refresh: () => void;
}

/** A list item's id, for matching a row with its new version (every list of the API has `id`). */
const idOf = (item: unknown): unknown => (item as { id?: unknown }).id;

/** A cursor-paginated list: the first page per change of `deps`, more on request ("Load more"). */
export function usePaged<T>(loadPage: (cursor?: string) => Promise<Page<T>>, deps: unknown[]): Paged<T> {
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const { problem, loading, start } = useLatestRequest();

  // How many pages are shown: a refresh of a single page replaces it, of more merges into them.
  const pages = useRef(0);
  const fetchPage = (from: string | undefined, append: boolean) =>
    start(
      () => loadPage(from),
      (page) => {
        pages.current = append ? pages.current + 1 : 1;
        setItems((previous) => (append ? [...previous, ...page.data] : page.data));
        setCursor(page.next_cursor);
      },
    );

  // The caller names what the loader depends on, as with useEffect.
  const reload = useCallback(() => fetchPage(undefined, false), deps);
  useEffect(reload, [reload]);
  // Which load a refresh belongs to: one that answers after the list was reloaded (a filter changed) is dropped.
  const loads = useRef(0);
  useEffect(() => {
    loads.current++;
  }, [reload]);

  const refresh = () => {
    const mine = loads.current;
    loadPage(undefined).then(
      (page) => {
        if (mine !== loads.current) return;
        if (pages.current <= 1) {
          // One page shown: the new one as it is (a row that no longer matches the filter leaves it).
          setItems(page.data);
          setCursor(page.next_cursor);
          return;
        }
        setItems((previous) => {
          const fresh = new Map(page.data.map((item) => [idOf(item), item]));
          const shown = new Set(previous.map(idOf));
          const added = page.data.filter((item) => !shown.has(idOf(item)));
          return [...added, ...previous.map((item) => fresh.get(idOf(item)) ?? item)];
        });
      },
      // A poll that fails changes nothing: the next one may work, and a real load shows its problem.
      () => undefined,
    );
  };

  return {
    items,
    problem,
    loading,
    hasMore: cursor !== null,
    loadMore: () => cursor !== null && fetchPage(cursor, true),
    reload,
    refresh,
  };
}

export interface Action {
  busy: boolean;
  problem: ProblemDetails | null;
  /** Runs `work`; true when it succeeded, else the problem is kept for display. */
  run: (work: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
}

/** A write the user started: a busy flag for its button and the server's problem when it fails. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ProblemDetails | null>(null);
  const run = async (work: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setProblem(null);
    try {
      await work();
      return true;
    } catch (error) {
      setProblem(problemFrom(error));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, problem, run, clear: () => setProblem(null) };
}

/** A client-side check failed before anything was sent; shown like a server problem. */
export function localProblem(detail: string): ApiError {
  return new ApiError({ title: 'Invalid input', detail });
}

// Offered when the user may not list roles: the built-in ones exist in every organization.
export const BUILT_IN_ROLES = ['viewer', 'developer', 'api_manager', 'administrator'];

/** Every role of the organization when the user may list them; `data` is null when they may not. */
export function useAllRoles(): Loaded<Role[] | null> {
  const can = useCan();
  return useLoad(
    async () =>
      can('roles:read')
        ? everyPage((cursor) => call(api.GET('/v1/roles', { params: { query: { cursor, limit: 100 } } })))
        : null,
    [],
  );
}

/** Role names for a select: every role when the user may list them, else the built-in ones. */
export function useRoleNames(): string[] {
  const roles = useAllRoles();
  return roles.data ? roles.data.map((role) => role.role_name) : BUILT_IN_ROLES;
}

/**
 * Calls `poll` every `intervalMs` while the page is visible (and once when it becomes visible again): a
 * hidden tab asks nothing.
 */
export function usePoll(poll: () => void, intervalMs: number, active = true): void {
  const latest = useRef(poll);
  latest.current = poll;
  useEffect(() => {
    if (!active) return;
    const tick = () => {
      if (document.visibilityState === 'visible') latest.current();
    };
    const timer = setInterval(tick, intervalMs);
    document.addEventListener('visibilitychange', tick);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', tick);
    };
  }, [intervalMs, active]);
}

/**
 * A user's name by id, for owners and actors: every user when the signed-in user may list them, else only
 * the signed-in user. `nameOf` answers the id itself for a user not known here.
 */
export function useUserNames(): { nameOf: (id: string) => string; known: (id: string) => boolean } {
  const can = useCan();
  const me = useUser();
  const users = useLoad(
    async () =>
      can('users:read')
        ? everyPage((cursor) => call(api.GET('/v1/users', { params: { query: { cursor, limit: 100 } } })))
        : [],
    [],
  );
  const names = new Map((users.data ?? []).map((user) => [user.id, user.name]));
  names.set(me.id, me.name);
  return { nameOf: (id) => names.get(id) ?? id, known: (id) => names.has(id) };
}
