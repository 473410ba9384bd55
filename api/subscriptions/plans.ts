import type { Knex } from 'knex';
import type { PlanRow } from '../../db/subscriptions/model';

/** The operator's plan list: enabled plans sold directly (offer-only ones never), in operator order. */
export async function listedPlans(db: Knex): Promise<PlanRow[]> {
  return db('subscription_plans')
    .where({ enabled: true, offer_only: false })
    .orderBy([{ column: 'position' }, { column: 'created_at' }, { column: 'code' }])
    .select<PlanRow[]>('*');
}

/** A plan one may subscribe to: present and switched on (offer-only plans included, checked against their offer later). */
export async function findSubscribablePlan(db: Knex, planId: string): Promise<PlanRow | null> {
  const row = await db('subscription_plans').where({ id: planId, enabled: true }).first<PlanRow | undefined>('*');
  return row ?? null;
}
