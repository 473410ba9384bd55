import type { Knex } from 'knex';
import { closedCircuit, type CircuitStores } from '../../common/circuit';
import { circuitRecordOf, moveCircuit, type CircuitRow } from './move-circuit';

/** Circuits whose state every process shares: a row of `circuits` per service name. */
export function postgresCircuitStores(db: Knex): CircuitStores {
  return (name) => ({
    read: async () => {
      const row = await db('circuits').where({ name }).first<CircuitRow | undefined>('state', 'failures', 'openings', 'retry_at', 'version');
      return row ? circuitRecordOf(row) : closedCircuit;
    },
    move: (from, to) => moveCircuit(db, name, from.version, to),
  });
}
