import type { Knex } from 'knex';
import type { CircuitMove, CircuitRecord } from '../../common/circuit';

export interface CircuitRow {
  state: CircuitRecord['state'];
  failures: number;
  openings: number;
  retry_at: Date | null;
  version: string;
}

export function circuitRecordOf(row: CircuitRow): CircuitRecord {
  return { state: row.state, failures: row.failures, openings: row.openings, retryAt: row.retry_at?.getTime() ?? null, version: Number(row.version) };
}

/**
 * Any move of a circuit, guarded by the version it was read at: a caller whose read is stale
 * changes nothing (and reads again). The first move of a circuit never stored (version 0) inserts
 * its row; two such first moves at once insert one, the other finds the row and is stale.
 */
export async function moveCircuit(db: Knex, name: string, fromVersion: number, to: CircuitMove): Promise<CircuitRecord | null> {
  const { rows } = await db.raw<{ rows: CircuitRow[] }>(
    `insert into circuits as c (name, state, failures, openings, retry_at, version)
     values (:name, :state, :failures, :openings, :retryAt, :fromVersion + 1)
     on conflict (name) do update
       set state = excluded.state, failures = excluded.failures, openings = excluded.openings,
           retry_at = excluded.retry_at, version = excluded.version
       where c.version = :fromVersion
     returning state, failures, openings, retry_at, version`,
    { name, state: to.state, failures: to.failures, openings: to.openings, retryAt: to.retryAt === null ? null : new Date(to.retryAt), fromVersion },
  );
  return rows.length ? circuitRecordOf(rows[0]) : null;
}
