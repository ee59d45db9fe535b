import { TickBatch } from './tick-batch';

/** A row of an organization, found by its id. */
interface OrganizationRow {
  id: string;
  organizationId: string;
}

/**
 * Reads by id within an organization for the hot paths of requests (the access token's user, a new
 * task's agent): the reads of one turn of the event loop go out as one statement (`findByIds`), a row
 * asked for by several of them once. Each read is still sent after the call that asked for it, so a
 * change committed before a request arrived is what that request sees, as with a read of its own;
 * under load, concurrent requests for one row cost one row, not one query each. The answer may be
 * shared by the calls of that turn: read it, never change it.
 */
export function batchedReadsById<Row extends OrganizationRow>(
  findByIds: (ids: string[]) => Promise<Row[]>,
): (organizationId: string, id: string) => Promise<Readonly<Row> | null> {
  const batch = new TickBatch<OrganizationRow, Readonly<Row> | null>(async (refs) => {
    const found = new Map((await findByIds(refs.map((ref) => ref.id))).map((row) => [row.id, row]));
    return refs.map(({ organizationId, id }) => {
      const row = found.get(id);
      // The right id under another organization is nobody's.
      return row?.organizationId === organizationId ? row : null;
    });
  });
  return (organizationId, id) => batch.add({ organizationId, id });
}
