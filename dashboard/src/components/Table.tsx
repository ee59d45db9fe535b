import type { ComponentChildren } from 'preact';
import type { Paged } from '../api/hooks';
import { ProblemNote } from './Page';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** A row's first column names it for screen readers (a row header). */
  rowHeader?: boolean;
}

/**
 * A data table in a horizontally scrollable, keyboard-focusable region, busy while it loads, with the
 * list's problem and a "Load more" button when the list has another page. However wide its cells, only
 * the region scrolls sideways, never the page (a 390 px phone included).
 */
export function Table<T>({
  caption,
  columns,
  rows,
  rowKey,
  loading = false,
  empty = 'Nothing here yet.',
  paged,
  class: className,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  loading?: boolean;
  empty?: string;
  paged?: Paged<T>;
  /** A class for the table, for a page's own column rules. */
  class?: string;
}) {
  const busy = paged ? paged.loading : loading;
  return (
    <div class="table-block">
      <div class="table-wrap" role="region" aria-label={caption} tabIndex={0} aria-busy={busy}>
        <table class={className}>
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col">
                  {column.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((column) =>
                  column.rowHeader ? (
                    <th key={column.header} scope="row">
                      {column.cell(row)}
                    </th>
                  ) : (
                    <td key={column.header}>{column.cell(row)}</td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
        {rows.length === 0 && !busy && !paged?.problem && <p class="empty">{empty}</p>}
      </div>
      {busy && (
        <p class="loading" role="status" aria-busy="true">
          Loading…
        </p>
      )}
      {paged && <ProblemNote problem={paged.problem} />}
      {paged && paged.hasMore && !paged.loading && (
        <button type="button" class="secondary" onClick={paged.loadMore}>
          Load more
        </button>
      )}
    </div>
  );
}
