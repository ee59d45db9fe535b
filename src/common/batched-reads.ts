import { TickBatch } from './tick-batch';

/** Which row: its id, and the organization it must belong to. */
export interface OrganizationRowRef {
  organizationId: string;
  id: string;
}

/**
 * Reads by id within an organization for the hot paths of requests (the access token's user, a new
 * task's agent): the reads of one turn of the event loop go out as one statement (`findAmong`, given
 * each distinct (organization, id) pair once, scoped by both), a row asked for by several of them read
 * once. Each read is still sent after the call that asked for it, so a change committed before a request
 * arrived is what that request sees, as with a read of its own; under load, concurrent requests for one
 * row cost one row, not one query each. The answer may be shared by the calls of that turn: read it,
 * never change it.
 */
export function batchedReadsById<Row extends OrganizationRowRef>(
  findAmong: (refs: OrganizationRowRef[]) => Promise<Row[]>,
): (organizationId: string, id: string) => Promise<Readonly<Row> | null> {
  const pairKey = ({ organizationId, id }: OrganizationRowRef) => `${organizationId} ${id}`;
  const batch = new TickBatch<OrganizationRowRef, Readonly<Row> | null>(async (refs) => {
    const distinct = [...new Map(refs.map((ref) => [pairKey(ref), ref])).values()];
    const found = new Map((await findAmong(distinct)).map((row) => [pairKey(row), row]));
    return refs.map((ref) => found.get(pairKey(ref)) ?? null);
  });
  return (organizationId, id) => batch.add({ organizationId, id });
}
