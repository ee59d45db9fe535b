/** What the API-key pages read besides the keys themselves: defaults, leak reports, pages of a list. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useCan } from '../permissions';
import { api, call, type ApiKey, type Page } from './client';
import { useLoad } from './hooks';
import { ApiError, type ProblemDetails } from './session';

/** The limits of a key that sets none (GET /v1/api-keys/defaults); undefined until loaded. */
export function useKeyDefaults() {
  const can = useCan();
  const defaults = useLoad(
    async () => (can('api_keys:read') ? call(api.GET('/v1/api-keys/defaults')) : undefined),
    [],
  );
  return defaults.data;
}

/**
 * Each key's requests in the last 24 hours (GET /v1/usage, by default the 24 hours that end with the
 * current one): one request for the whole organization, whichever page of keys is shown. A key missing
 * from the answer made no request. `version` asks again (the list was reloaded). Undefined until loaded.
 */
export function useRequestsLastDay(version: unknown): Map<string, number> | undefined {
  const usage = useLoad(async () => {
    const answer = await call(api.GET('/v1/usage'));
    // The default grouping is by key; the union type also allows the identities' shape.
    const rows = answer.data as { key_id?: string; requests: number }[];
    return new Map(rows.filter((row) => row.key_id).map((row) => [row.key_id!, row.requests]));
  }, [version]);
  return usage.data;
}

export interface LeakReport {
  source: string;
  /** Where the key was found; null when the report named no place (a public report). */
  url: string | null;
  action_taken: string;
  reported_at: string;
}

/** Reports shown per key, newest first; a key reported at more places says how many more. */
const REPORTS_READ = 10;

/**
 * Where each leaked key among `keys` was reported, from its `key.leaked` audit entries (written once
 * per key and source URL). Only keys with `leaked_at` are asked about, one request each.
 */
export function useLeakReports(keys: ApiKey[]): Map<string, LeakReport[]> {
  const leaked = keys.filter((key) => key.leaked_at).map((key) => key.id);
  const reports = useLoad(async () => {
    const entries = await Promise.all(
      leaked.map(async (id) => {
        const page = await call(
          api.GET('/v1/api-keys/{id}/audit-log', {
            params: { path: { id }, query: { action: 'key.leaked', limit: REPORTS_READ } },
          }),
        );
        const list: LeakReport[] = page.data.map((entry) => ({
          source: String(entry.details.source ?? ''),
          url: typeof entry.details.url === 'string' && entry.details.url ? entry.details.url : null,
          action_taken: String(entry.details.action_taken ?? 'none'),
          reported_at: entry.created_at,
        }));
        return [id, list] as const;
      }),
    );
    return new Map(entries);
  }, [leaked.join(',')]);
  return reports.data ?? new Map();
}

/** A URL that may be a link: http(s) only (a report's URL comes from outside). */
export function safeLink(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
  } catch {
    return null;
  }
}

export interface CursorPages<T> {
  items: T[];
  problem: ProblemDetails | null;
  loading: boolean;
  /** 1 for the first page. */
  number: number;
  hasNext: boolean;
  hasPrevious: boolean;
  next: () => void;
  previous: () => void;
  reload: () => void;
  /** Back to page 1 (where a new key, the newest, is listed). */
  first: () => void;
}

/**
 * Numbered pages over a cursor-paginated list: the cursors of the pages seen are kept, so Previous goes
 * back exactly; a change of `deps` (filters, search) starts again at page 1.
 */
export function useCursorPages<T>(
  loadPage: (cursor?: string) => Promise<Page<T>>,
  deps: unknown[],
): CursorPages<T> {
  const [items, setItems] = useState<T[]>([]);
  // cursors[i] opens page i + 1 (undefined: the first page).
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [problem, setProblem] = useState<ProblemDetails | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);

  const show = useCallback((stack: (string | undefined)[]) => {
    const mine = ++generation.current;
    setLoading(true);
    loadPage(stack[stack.length - 1]).then(
      (page) => {
        if (mine !== generation.current) return;
        // A page emptied by deletions (not the first): step back to the one before it.
        if (!page.data.length && stack.length > 1) {
          show(stack.slice(0, -1));
          return;
        }
        setCursors(stack);
        setItems(page.data);
        setNextCursor(page.next_cursor);
        setProblem(null);
        setLoading(false);
      },
      (error: unknown) => {
        if (mine !== generation.current) return;
        setProblem(error instanceof ApiError ? error.problem : { title: 'Error', detail: String(error) });
        setLoading(false);
      },
    );
    // The caller names what the loader depends on, as with useEffect.
  }, deps);

  useEffect(() => show([undefined]), [show]);

  return {
    items,
    problem,
    loading,
    number: cursors.length,
    hasNext: nextCursor !== null,
    hasPrevious: cursors.length > 1,
    next: () => nextCursor !== null && show([...cursors, nextCursor]),
    previous: () => cursors.length > 1 && show(cursors.slice(0, -1)),
    reload: () => show(cursors),
    first: () => show([undefined]),
  };
}
