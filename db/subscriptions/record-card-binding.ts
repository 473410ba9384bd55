import type { Knex } from 'knex';

/**
 * Keeps the card binding that a paid period's order reports (the first payment was registered with
 * a request to save the card); renewals charge it server-to-server.
 */
export async function recordCardBinding(trx: Knex.Transaction, paymentId: string, bindingId: string): Promise<void> {
  await trx.raw(
    `update subscriptions s set card_binding_id = :bindingId
     from payments p
     where p.id = :paymentId and s.id = p.subscription_id and s.card_binding_id is distinct from :bindingId`,
    { paymentId, bindingId },
  );
}
