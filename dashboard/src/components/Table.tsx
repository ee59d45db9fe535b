import type { ComponentChildren } from 'preact';
import type { Paged } from '../api/hooks';
import { ProblemNote } from './Page';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** A row's first column names it for screen readers (a row header). */
  rowHeader?: boolean;
  /**
   * Folds into the row on a narrow table (a phone): the cell leaves its column and becomes a line under
   * the row's visible cells, labelled with its header. Columns that identify or describe a row (and its
   * actions) never fold.
   */
  fold?: boolean;
}

/** The widest number of columns left once the others fold (styles.css has a layout for each). */
const MAX_UNFOLDED = 4;

/**
 * A data table in a horizontally scrollable, keyboard-focusable region, busy while it loads, with the
 * list's problem and a "Load more" button when the list has another page. However wide its cells, only
 * the region scrolls sideways, never the page (a 390 px phone included). When the table is narrow (a
 * container query in styles.css, so it follows the table's width, not the window's) the columns marked
 * `fold` leave their column and stack under the row's visible cells, each labelled with its header
 * (`data-label`): what identifies a row stays in view and nothing is off to the right. Each cell is
 * rendered once, so a row's controls and the dialogs they open are never duplicated.
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
  const unfolded = columns.filter((column) => !column.fold).length;
  if (unfolded === 0 || (unfolded < columns.length && unfolded > MAX_UNFOLDED)) {
    throw new Error(`${caption}: a table keeps 1 to ${MAX_UNFOLDED} columns unfolded, not ${unfolded}`);
  }
  const folding = unfolded < columns.length ? `folding folding-${unfolded}` : '';
  const tableClass = [className, folding].filter(Boolean).join(' ') || undefined;
  const foldClass = (column: Column<T>) => (column.fold ? 'fold' : undefined);
  return (
    <div class="table-block">
      <div class="table-wrap" role="region" aria-label={caption} tabIndex={0} aria-busy={busy}>
        <table class={tableClass}>
          <caption class="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col" class={foldClass(column)}>
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
                    <th key={column.header} scope="row" class={foldClass(column)} data-label={column.header}>
                      {column.cell(row)}
                    </th>
                  ) : (
                    <td key={column.header} class={foldClass(column)} data-label={column.header}>
                      {column.cell(row)}
                    </td>
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
