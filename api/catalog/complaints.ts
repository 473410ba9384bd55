import type { Knex } from 'knex';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { byIdOrSlug } from '../../db/catalog/identifiers';

const complaintReasons = ['unsafe', 'my_face', 'brand', 'quality', 'other'] as const;
export type ComplaintReason = (typeof complaintReasons)[number];

/** Clients send codes from newer app versions too: an unknown one is kept as `other`. */
function complaintReasonOf(code: string | undefined): ComplaintReason {
  return (complaintReasons as readonly string[]).includes(code ?? '') ? (code as ComplaintReason) : 'other';
}

export interface ComplaintPolicy {
  /** Open complaints from this many different people demote the effect. */
  demoteThreshold: number;
  /** Only accounts at least this old count toward demotion (fresh accounts are cheap to make). */
  minAccountAgeDays: number;
}

/**
 * Catalog rule 5. Files a complaint of `userId` about an effect that is not hidden; false when
 * there is no such effect. A repeat while the person's case is open changes nothing (the partial
 * unique index). The demotion is one guarded statement: it happens once, when the count of open
 * complaints from old-enough accounts reaches the threshold, and it sends the effect to moderators
 * (demoted and unresolved). The answer does not depend on whether it happened.
 */
async function fileComplaint(
  db: Knex,
  complaint: { effect: string; userId: string; reason: ComplaintReason; note: string | null },
  policy: ComplaintPolicy,
): Promise<boolean> {
  const effect = await db('effects').where(byIdOrSlug(complaint.effect)).andWhere({ hidden: false }).whereNull('private_to').first('id');
  if (!effect) return false;
  await db.raw(
    `insert into complaints (effect_id, user_id, reason, note) values (:effectId, :userId, :reason, :note)
     on conflict (effect_id, user_id) where resolved_at is null do nothing`,
    { effectId: effect.id, userId: complaint.userId, reason: complaint.reason, note: complaint.note },
  );
  await db.raw(
    `update effects set demoted_at = now(), updated_at = now()
     where id = :effectId and demoted_at is null and (
       select count(*) from complaints c join users u on u.id = c.user_id
       where c.effect_id = :effectId and c.resolved_at is null
         and u.created_at <= now() - make_interval(days => :minAccountAgeDays)
     ) >= :demoteThreshold`,
    { effectId: effect.id, ...policy },
  );
  return true;
}

/**
 * A moderator's decision on an effect's open complaints: `keep` lifts the demotion, `hide` takes the
 * effect out of the catalog. Either way the cases are closed, so the same people may complain again.
 */
export async function resolveComplaints(db: Knex, effectId: string, decision: 'keep' | 'hide'): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('complaints').where({ effect_id: effectId }).whereNull('resolved_at').update({ resolved_at: trx.fn.now() });
    const change = decision === 'keep' ? { demoted_at: null } : { hidden: true };
    await trx('effects').where({ id: effectId }).update({ ...change, updated_at: trx.fn.now() });
  });
}

export const complaintRoutes = [
  defineRoute<{ reason: string; note?: string }, unknown, { id: string }>({
    method: 'POST', path: '/v1/effects/{id}/complaints', access: 'registered', limits: [writeBudget()],
    summary: 'Complain about an effect (full accounts only); the answer is the same whatever follows.',
    body: schema.object({ reason: schema.string({ maxLength: 64 }), note: schema.string({ maxLength: 2000 }) }, ['reason']),
    responses: { 204: { description: 'Complaint taken' } },
    errors: { not_found: 'The effect is absent or already hidden.' },
    handler: async (ctx, { params, body }) => {
      const { db, config } = ctx.services;
      const filed = await fileComplaint(
        db,
        { effect: params.id, userId: caller(ctx).id, reason: complaintReasonOf(body.reason), note: body.note?.trim() || null },
        { demoteThreshold: config.catalog.complaintDemoteThreshold, minAccountAgeDays: config.catalog.complaintMinAccountAgeDays },
      );
      if (!filed) throw errors.notFound('Effect not found.');
      ctx.status = 204;
    },
  }),
];
